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
    emittedBy: "DELETE /v1/organizations/{id}/members/{userId}; deleting one's account",
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
    data: {
      consent_id: 'the ledger row',
      patient_profile_id: 'the patient profile',
      purpose_code: 'the purpose',
      purpose_version: 'its version',
      source: 'how it was given',
    },
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
  // People, custom fields, form templates and forms. `id` is the resource's own id.
  ...crud('patient', 'a patient record', 'POST /v1/patients', 'PUT /v1/patients/{id}', 'DELETE /v1/patients/{id} (soft delete)', {
    created: { id: 'the patient record', user_id: 'its user' },
    updated: { id: 'the patient record', fields: 'names of the changed fields' },
    deleted: { id: 'the patient record', user_id: 'its user' },
  }),
  ...crud('specialist', 'a specialist profile', 'POST /v1/specialists', 'PUT /v1/specialists/{id}', 'DELETE /v1/specialists/{id}', {
    created: { id: 'the specialist', user_id: 'its user' },
    updated: { id: 'the specialist', fields: 'names of the changed fields' },
    deleted: { id: 'the specialist', user_id: 'its user' },
  }),
  {
    type: 'custom_field.published',
    emittedBy: 'POST /v1/custom-fields (version 1), POST /v1/custom-fields/{id}/publish',
    description: 'A custom field version was published: new forms and records use it.',
    data: { id: 'the custom field', entity_type: 'patient, specialist, ...', version: 'the published version' },
  },
  {
    type: 'custom_field.updated',
    emittedBy: 'PATCH /v1/custom-fields/{id}, POST /v1/custom-fields/{id}/rollback',
    description: 'The draft of a custom field changed (not yet published).',
    data: { id: 'the custom field', version: 'its version', published: 'false', rolled_back_to: 'the restored version (rollback only)' },
  },
  {
    type: 'custom_field.deleted',
    emittedBy: 'DELETE /v1/custom-fields/{id}',
    description: 'A custom field was deleted (soft); form snapshots keep it.',
    data: { id: 'the custom field', entity_type: 'its entity type' },
  },
  {
    type: 'form_template.published',
    emittedBy: 'POST /v1/form-templates (version 1), POST /v1/form-templates/{id}/publish',
    description: 'A form template version was published.',
    data: { id: 'the template', version: 'the published version' },
  },
  {
    type: 'form_template.updated',
    emittedBy: 'PATCH /v1/form-templates/{id}, rollback',
    description: 'The draft of a form template changed.',
    data: { id: 'the template', version: 'its version', published: 'false', rolled_back_to: 'the restored version (rollback only)' },
  },
  {
    type: 'form_template.deleted',
    emittedBy: 'DELETE /v1/form-templates/{id}',
    description: 'A form template was deleted.',
    data: { id: 'the template' },
  },
  {
    type: 'form.created',
    emittedBy: 'POST /v1/forms',
    description: 'A form was created for a patient from the latest published template version.',
    data: {
      id: 'the form',
      patient_id: 'the patient record',
      form_template_id: 'the template',
      template_version: 'the version snapshotted',
    },
  },
  {
    type: 'form.updated',
    emittedBy: 'PATCH /v1/forms/{id}',
    description: 'Values of a pending form changed.',
    data: { id: 'the form', patient_id: 'the patient record' },
  },
  {
    type: 'form.signed',
    emittedBy: 'POST /v1/forms/{id}/sign',
    description: 'A form was signed and is now immutable.',
    data: { id: 'the form', patient_id: 'the patient record', form_template_id: 'the template' },
  },
  {
    type: 'form.deleted',
    emittedBy: 'DELETE /v1/forms/{id}',
    description: 'An unsigned form was deleted.',
    data: { id: 'the form', patient_id: 'the patient record' },
  },
  {
    type: 'form.file_added',
    emittedBy: 'POST /v1/forms/{id}/files',
    description: 'A file was attached to a form.',
    data: { id: 'the form', file_id: 'the file' },
  },
  {
    type: 'form.file_removed',
    emittedBy: 'DELETE /v1/forms/{id}/files/{fileId}',
    description: 'A file was removed from an unsigned form.',
    data: { id: 'the form', file_id: 'the file' },
  },
  // The composer.
  {
    type: 'exercise.render_ready',
    emittedBy: 'the composer, when the delivery provider has the video ready',
    description: "A composed exercise video is playable (organization exercises only; the platform library's renders have no subscribers).",
    data: {
      render_id: 'the render',
      exercise_id: 'the exercise',
      recipe_hash: 'its recipe hash',
      language: 'its language',
      asset_version: 'the asset version',
      stream_video_id: 'provider id',
      playback_hls_url: 'HLS URL',
    },
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

/** created / updated / deleted entries of one resource. */
function crud(
  resource: string,
  what: string,
  create: string,
  update: string,
  del: string,
  data: Record<'created' | 'updated' | 'deleted', Record<string, string>>,
): EventType[] {
  return [
    {
      type: `${resource}.created`,
      emittedBy: create,
      description: `${what[0]!.toUpperCase()}${what.slice(1)} was created.`,
      data: data.created,
    },
    {
      type: `${resource}.updated`,
      emittedBy: update,
      description: `${what[0]!.toUpperCase()}${what.slice(1)} changed.`,
      data: data.updated,
    },
    {
      type: `${resource}.deleted`,
      emittedBy: del,
      description: `${what[0]!.toUpperCase()}${what.slice(1)} was deleted.`,
      data: data.deleted,
    },
  ];
}

/**
 * Internal event types: emitted into the same outbox but consumed only inside the platform
 * (WorkerRegistry.onEvent), never delivered to webhooks, not even to "*" subscriptions, because their
 * payloads carry what receivers must not get (health data, for example).
 */
export const INTERNAL_TYPES = new Set(['exercise_session.ended']);

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
