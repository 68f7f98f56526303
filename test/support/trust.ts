// Shared by the trust suites: a shop (organisation + webhook
// integration posting to a real local receiver), visitors that send what a
// browser (or an attacker with curl) would, and a wait for the dispatcher to
// have delivered everything an organisation queued.
import { expect } from 'chai';
import type { Reply, BodyOf } from './client.ts';
import type { TestServer } from './harness.ts';
import type { ReceivedRequest, TestReceiver } from './receiver.ts';
import { type Account, newMerchant, newWebhook, unique } from './accounts.ts';
import { b64url } from './payload.ts';
import type { OrgId } from '../../src/db/tenancy.ts';

export const PHISH = 'https://phish.attacker.example/login';

export interface Shop {
  orgId: OrgId;
  domain: string;
  /** an URL under the shop's own domain */
  url(path: string): string;
  visitor(core?: string, corex?: string): Visitor;
  /** PATCH the organisation's trust settings; answers the reply */
  settings(body: Record<string, unknown>): Promise<Reply<BodyOf<'updateOrganisationSettings'>>>;
  read(): Promise<BodyOf<'getOrganisation'>>;
  /** every delivery body the receiver got for this shop, parsed */
  received(): Record<string, unknown>[];
  /** waits until the dispatcher has nothing pending for this shop */
  drained(): Promise<void>;
}

export interface Visitor {
  core: string;
  roaming: string;
  corex: string;
  /** an event; its reply typed T (the 202's body by default, `TrackingError` where a test reads a refusal) */
  track<T = BodyOf<'recordViewEvent'>>(name: string, body: Record<string, unknown>, headers?: Record<string, string>): Promise<Reply<T>>;
  /** identify; its reply typed T (the 200's body by default, `TrackingError` where a test reads a refusal) */
  identify<T = BodyOf<'identifyVisitor'>>(payload: Record<string, string>, headers?: Record<string, string>): Promise<Reply<T>>;
  read(): Promise<BodyOf<'getVisitor'>>;
}

export async function newShop(srv: TestServer, account: Account, receiver: TestReceiver | undefined, opts: { domain?: string } = {}): Promise<Shop> {
  const m = await newMerchant(srv, account, opts.domain ? { domain: opts.domain } : {});
  const orgId = m.organisation.id;
  const domain = m.organisation.domain;
  if (receiver) await newWebhook(srv, account, orgId, { endpoint: `${receiver.url}?org=${orgId}`, do_events: true, do_contacts: true });
  const base = `/v1/rest/${account.platform}/organisations/${orgId}`;
  const shop: Shop = {
    orgId,
    domain,
    url: (path) => `https://${domain}${path}`,
    visitor(core = unique('c'), corex = 'null') {
      const roaming = unique('r');
      return {
        core,
        roaming,
        corex,
        track: <T>(name: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
          srv.api.post<T>(`/jsv1/${orgId}/${roaming}/${core}/${corex}/event/${name}`, body, { headers }),
        identify: <T>(payload: Record<string, string>, headers: Record<string, string> = {}) =>
          srv.api.get<T>(`/jsv1/identify/${orgId}/${roaming}/${core}/${b64url(payload)}`, { headers }),
        async read() {
          const r = await srv.api.get<BodyOf<'getVisitor'>>(`${base}/visitors/${core}`, { token: account.token });
          expect(r.status, r.text).to.equal(200);
          return r.body;
        },
      };
    },
    settings: (body) => srv.api.request<BodyOf<'updateOrganisationSettings'>>('PATCH', base, { body, token: account.token }),
    async read() {
      const r = await srv.api.get<BodyOf<'getOrganisation'>>(base, { token: account.token });
      expect(r.status, r.text).to.equal(200);
      return r.body;
    },
    received: () =>
      (receiver?.requests ?? [])
        .filter((r: ReceivedRequest) => r.path === `/hook?org=${orgId}`)
        .map((r: ReceivedRequest) => JSON.parse(r.body) as Record<string, unknown>),
    async drained() {
      const until = Date.now() + 20_000;
      for (;;) {
        const rows = await srv.deps.db.selectFrom('deliveries').select(['status']).where('org_id', '=', orgId).execute();
        const delivered = rows.filter((r) => r.status === 'delivered').length;
        if (rows.every((r) => r.status !== 'pending') && shop.received().length >= delivered) return;
        if (Date.now() > until) throw new Error(`deliveries of organisation ${orgId} still pending: ${JSON.stringify(rows)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
  return shop;
}

/** Every stored delivery body of the organisation (whether sent yet or not). */
export async function storedDeliveries(srv: TestServer, orgId: OrgId): Promise<{ kind: string; body: Record<string, unknown> }[]> {
  const rows = await srv.deps.db.selectFrom('deliveries').select(['kind', 'body']).where('org_id', '=', orgId).orderBy('id').execute();
  return rows.map((r) => ({ kind: r.kind, body: JSON.parse(r.body) as Record<string, unknown> }));
}

/** Rows of one visitor anywhere in the identity and event tables. */
export async function footprint(srv: TestServer, orgId: OrgId, core: string) {
  const db = srv.deps.db;
  const visitors = await db.selectFrom('visitors').select('core_id').where('org_id', '=', orgId).where('core_id', '=', core).execute();
  const links = await db.selectFrom('visitor_contacts').select('contact_id').where('org_id', '=', orgId).where('core_id', '=', core).execute();
  const events = await db.selectFrom('events').select('id').where('org_id', '=', orgId).where('core_id', '=', core).execute();
  return { visitors: visitors.length, links: links.length, events: events.length };
}
