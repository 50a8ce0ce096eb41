/**
 * The catalog of domain events that webhook subscribers can choose (docs/events.md is generated from
 * it by `npm run docs:events`; the OpenAPI description carries it as its `webhooks` section). Payloads
 * carry ids and states, never personal data (names, emails): receivers fetch details through the API
 * with their own credentials, so an erased person's data never lingers in a receiver's event log.
 * Every payload also has `organization_id`.
 */
export interface EventType {
  type: string;
  emittedBy: string;
  description: string;
  /** Payload fields besides organization_id: name -> description. */
  data: Record<string, string>;
}

export const EVENT_CATALOG: EventType[] = [
  {
    type: 'organization.updated',
    emittedBy: 'PATCH /v1/organizations/{id}',
    description: 'Organization fields changed.',
    data: { changed: 'names of the changed fields' },
  },
  {
    type: 'member.added',
    emittedBy: 'POST /v1/organizations/{id}/members (new member)',
    description: 'A user became a staff member.',
    data: { user_id: 'the member', role_id: 'the role', role_code: 'its code' },
  },
  {
    type: 'member.role_changed',
    emittedBy: 'POST /v1/organizations/{id}/members (existing member, other role)',
    description: "A member's role changed.",
    data: { user_id: 'the member', role_id: 'the new role', role_code: 'its code', previous_role_code: 'the old code' },
  },
  {
    type: 'member.removed',
    emittedBy: 'DELETE /v1/organizations/{id}/members/{userId}; deleting one\'s account',
    description: 'A staff membership ended.',
    data: { user_id: 'the former member' },
  },
  {
    type: 'domain.added',
    emittedBy: 'POST /v1/organizations/{id}/domains',
    description: 'A custom domain was added, unverified.',
    data: { domain_id: 'the domain', domain: 'the host name' },
  },
  {
    type: 'domain.verified',
    emittedBy: 'POST /v1/organizations/{id}/domains/{domainId}/verify (first success)',
    description: 'The DNS TXT record of a domain was found.',
    data: { domain_id: 'the domain', domain: 'the host name' },
  },
  {
    type: 'domain.deleted',
    emittedBy: 'DELETE /v1/organizations/{id}/domains/{domainId}',
    description: 'A custom domain was removed.',
    data: { domain_id: 'the domain', domain: 'the host name' },
  },
  {
    type: 'location.created',
    emittedBy: 'POST /v1/organizations/{id}/locations',
    description: 'A location was created.',
    data: { location_id: 'the location' },
  },
  {
    type: 'location.updated',
    emittedBy: 'PATCH /v1/organizations/{id}/locations/{locationId}',
    description: 'A location changed.',
    data: { location_id: 'the location', changed: 'names of the changed fields' },
  },
  {
    type: 'location.deleted',
    emittedBy: 'DELETE /v1/organizations/{id}/locations/{locationId}',
    description: 'A location was deleted.',
    data: { location_id: 'the location' },
  },
  {
    type: 'consent.granted',
    emittedBy: 'POST /v1/me/consents, staff grants, onboarding',
    description: 'A patient granted a consent purpose at the organization (one event per ledger row).',
    data: { consent_id: 'the ledger row', patient_profile_id: 'the patient profile', purpose_code: 'the purpose', purpose_version: 'its version', source: 'how it was given' },
  },
  {
    type: 'consent.withdrawn',
    emittedBy: 'self or staff withdrawal, and the cascades of leaving a clinic or deleting an account',
    description: 'An active consent was withdrawn.',
    data: { consent_id: 'the ledger row', patient_profile_id: 'the patient profile', purpose_code: 'the purpose' },
  },
  {
    type: 'patient.onboarded',
    emittedBy: 'POST /v1/portal/onboard',
    description: 'A user became a patient of the organization through the portal.',
    data: { patient_id: 'the patient record', user_id: 'the user' },
  },
  {
    type: 'patient.left',
    emittedBy: 'POST /v1/me/clinics/{org_id}/leave',
    description: 'A patient left the clinic: the patient record is soft-deleted and org consents withdrawn.',
    data: { patient_id: 'the patient record' },
  },
  {
    type: 'webhook_subscription.disabled',
    emittedBy: 'the delivery worker',
    description: 'A subscription was disabled: its endpoint answered 410 Gone, or failed for longer than the disable threshold.',
    data: { subscription_id: 'the subscription', reason: '`gone` or `failing`' },
  },
  {
    type: 'webhook.test',
    emittedBy: 'POST /v1/webhook-subscriptions/{uid}/test (sent to that subscription only)',
    description: 'A test delivery.',
    data: { subscription_id: 'the subscription', message: 'a fixed text' },
  },
];

/** Types that subscriptions may choose; others emitted by modules are internal (for example exercise_session.ended). */
export const SUBSCRIBABLE_TYPES = new Set(EVENT_CATALOG.map((e) => e.type));

/** Adds event types of later modules (their own catalogs) to the one list; called at module load. */
export function registerEventTypes(types: EventType[]): void {
  for (const t of types) {
    if (!SUBSCRIBABLE_TYPES.has(t.type)) {
      EVENT_CATALOG.push(t);
      SUBSCRIBABLE_TYPES.add(t.type);
    }
  }
}
