import type { ServerResponse } from 'node:http';

/**
 * Counts the webhook deliveries the server is handling: from the request's arrival until its answer is sent or
 * its connection closes. The delivery writer sizes its groups by it (see DeliveryWriterOptions.inProgress).
 */
export class DeliveriesInProgress {
  #count = 0;

  get count(): number {
    return this.#count;
  }

  /** Counts one request until its response closes (after the last byte is handed to the socket, or on abort). */
  track(response: ServerResponse): void {
    this.#count++;
    response.once('close', () => this.#count--);
  }
}
