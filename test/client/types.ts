// Type-level checks of the official client, compiled by `npm run typecheck`
// (never run): what the contract requires is required, what it does not
// know is refused, and answers and notifications are typed without casts.
// Each @ts-expect-error fails the typecheck if the error it expects goes away.
import {
  type EventBody,
  type TrackwayClient,
  type VisitorIds,
  type WebhookNotification,
  createTrackwayClient,
  eventPathParams,
  isTestDelivery,
  verifyWebhook,
  visitorCalls,
} from '../../src/client/index.ts';

export async function typedFlow(baseUrl: string): Promise<void> {
  const tw: TrackwayClient = createTrackwayClient({ baseUrl });
  const login = await tw.loginPlatformUser({ params: { path: { platform_name: 'acme' } }, body: { email: 'ops@acme.example', password: 'pw' } });
  const token: string | undefined = login.data?.bearer_token;
  const code: number | undefined = login.error?.code;
  tw.setToken(token);
  void code;
  // @ts-expect-error the login body needs a password
  await tw.loginPlatformUser({ params: { path: { platform_name: 'acme' } }, body: { email: 'ops@acme.example' } });
  // @ts-expect-error the path needs platform_name
  await tw.listOrganisations({ params: { path: {} } });
  // @ts-expect-error no such operation
  void tw.loginPlatformUsers;
  // an operation without required input takes no argument
  const health = await tw.getHealth();
  void health.data;

  const ids: VisitorIds = { org_id: 42, roaming_id: 'r-1', core_id: 'c-1' };
  const visitor = visitorCalls(tw, ids);
  const viewed = await visitor.track('productview', { product_id: 7, product_url: 'https://shop.example.com/p/7' });
  const accepted: 'accepted' | undefined = viewed.data?.status;
  void accepted;
  // @ts-expect-error not an event of the tracking API
  await visitor.track('purchase', {});
  const cart: EventBody<'updatecart'> = { product_id: 7, cart_url: 'https://shop.example.com/cart', line_items: [], cart_value: 0 };
  await visitor.track('updatecart', cart);
  // @ts-expect-error a buy needs its order_id
  await visitor.track('buy', { checkout_url: 'https://shop.example.com/done' });
  const who = await visitor.identify({ email: 'jane@example.com' });
  const core: string | undefined = who.data?.core_id;
  void core;
  // @ts-expect-error an identify field the contract does not know
  await visitor.identify({ mail: 'jane@example.com' });
  // @ts-expect-error org_id is a number
  eventPathParams({ org_id: '42', roaming_id: 'r-1', core_id: 'c-1' });
}

/** Notifications narrow by `medium`; `test` exists only on contact matches. */
export function describeNotification(n: WebhookNotification): string {
  switch (n.medium) {
    case 'matched':
      return `${n.contact}${n.test === true ? ' (test)' : ''} viewed ${(n.last_view ?? []).join(', ')}`;
    case 'event':
      return `${n.contact} ${n.event}`;
    case 'erased':
      // @ts-expect-error an erasure carries no event
      return `${n.contact} ${n.event}`;
  }
}

/** README's "The TypeScript client" example, as printed there (keep the two the same). */
export async function readmeExample(
  req: { headers: Record<string, string | string[] | undefined> },
  rawBody: string,
  welcome: (contact: string, lastView: string[] | undefined) => Promise<void>,
): Promise<unknown> {
  const platform_name = 'acme';
  const tw = createTrackwayClient({ baseUrl: 'http://localhost:8080' });

  // 2. log in (the token then goes on every request)
  const login = await tw.loginPlatformUser({
    params: { path: { platform_name } },
    body: { email: 'integrations@acme.example', password: 'correct horse battery staple' },
  });
  if (!login.data) throw new Error(`login failed: ${login.error?.message}`);
  tw.setToken(login.data.bearer_token);

  // 3. register a merchant
  const reg = await tw.registerClientUser({
    params: { path: { platform_name } },
    body: { email: 'jane@shop.example.com', name: 'Jane Doe', domain: 'shop.example.com', organisation_name: "Jane's Linen Shop" },
  });
  const org_id = reg.data!.organisation.id;

  // 4. a webhook integration (keep its signing_secret for verifyWebhook)
  const hook = await tw.createIntegration({
    params: { path: { platform_name } },
    body: {
      org_id,
      active: true,
      type: 'WEBHOOK',
      data: { endpoint: 'https://hooks.shop.example.com/trackway', httpTimeout: '10', do_events: true, do_contacts: true },
    },
  });
  const secret = hook.data!.integration.signing_secret;

  // 5. a visitor's events and identify (no corex_id, no base64 by hand)
  const visitor = visitorCalls(tw, { org_id, roaming_id: 'r-1', core_id: 'c-123' });
  await visitor.track('productview', { product_id: 42, price: 19.9, product_url: 'https://shop.example.com/products/linen-shirt' });
  await visitor.identify({ email: 'buyer@example.com', name: 'Bo Buyer' });
  const read = await tw.getVisitor({ params: { path: { platform_name, org_id, core_id: 'c-123' } } });

  // on the receiving side, with the raw body as it arrived (Node's req.headers or a fetch Headers)
  const note = verifyWebhook(secret, req.headers, rawBody); // throws WebhookVerificationError
  if (!isTestDelivery(req.headers, note) && note.medium === 'matched') await welcome(note.contact, note.last_view);
  return read.data;
}
