// registerAnalyticsUser: HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { registerAnalyticsUser, registrationDeps } from './registration.service.ts';

export function registrationHandlers(deps: Deps): HandlerMap<'registerAnalyticsUser'> {
  const reg = registrationDeps(deps);
  return {
    registerAnalyticsUser: async (c, ctx) => {
      await registerAnalyticsUser(reg, { token: c.request.query?.token, ip: ctx.ip, body: c.request.requestBody });
      return { status: 200, body: { status: 'success', message: 'Registration successful' } };
    },
  };
}
