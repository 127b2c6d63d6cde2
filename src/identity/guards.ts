import { AppError } from '../kernel/errors.ts';
import type { Principal } from './principal.ts';

/** Refuses a request whose key is not a team admin's (`request` is any object carrying its principal). */
export function requireTeamAdmin(request: { principal: Principal }): void {
  if (request.principal.role !== 'admin') throw new AppError('not_authorized', 'this operation needs a team admin key');
}

export function requireInstanceAdmin(request: { principal: Principal }): void {
  if (!request.principal.instanceAdmin)
    throw new AppError('not_authorized', 'this operation needs an instance admin key');
}
