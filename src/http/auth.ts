import type { FastifyRequest } from 'fastify';
import { AppError } from './errors.ts';

export function requireTeamAdmin(request: FastifyRequest): void {
  if (request.principal.role !== 'admin') throw new AppError('not_authorized', 'this operation needs a team admin key');
}

export function requireInstanceAdmin(request: FastifyRequest): void {
  if (!request.principal.instanceAdmin)
    throw new AppError('not_authorized', 'this operation needs an instance admin key');
}
