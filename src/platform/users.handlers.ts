// loginPlatformUser, registerClientUser, changePassword: HTTP shape only.
import type { Deps } from '../deps.ts';
import type { HandlerMap } from '../http/types.ts';
import { changeOwnPassword } from './password-change.service.ts';
import { principalOf } from './principal.rules.ts';
import { login, registerClientUser } from './users.service.ts';

export function usersHandlers(deps: Deps): HandlerMap<'loginPlatformUser' | 'registerClientUser' | 'changePassword'> {
  return {
    loginPlatformUser: async (c, ctx) => {
      const body = c.request.requestBody;
      const result = await login(deps, {
        platform: c.request.params.platform_name,
        email: body.email,
        password: body.password,
        ip: ctx.ip,
      });
      return { status: 200, body: { ...result, code: 2001, message: 'OK' } };
    },
    changePassword: async (c, ctx) => {
      const body = c.request.requestBody;
      const result = await changeOwnPassword(deps, principalOf(c), { current: body.current_password, next: body.new_password, ip: ctx.ip });
      return { status: 200, body: { ...result, code: 2001, message: 'Password changed' } };
    },
    registerClientUser: async (c) => {
      const result = await registerClientUser(deps, principalOf(c), c.request.requestBody);
      return { status: 201, body: { ...result, code: 2011, message: 'Created' } };
    },
  };
}
