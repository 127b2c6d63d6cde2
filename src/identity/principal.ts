export type SubjectType = 'user' | 'service_account';
export type TeamRole = 'admin' | 'member';

/** Who is calling: resolved from the API key on every authenticated request. */
export interface Principal {
  teamId: string;
  keyId: string;
  role: TeamRole;
  instanceAdmin: boolean;
  subject: {
    id: string;
    type: SubjectType;
    displayName: string;
    email: string | null;
  };
}

/** Whatever carries the principal of a request (a Fastify request does): what a service needs of a caller. */
export interface Caller {
  principal: Principal;
}

declare module '../kernel/caller.ts' {
  /** The kernel's caller is identity's principal. */
  interface RequestPrincipal extends Principal {}
}
