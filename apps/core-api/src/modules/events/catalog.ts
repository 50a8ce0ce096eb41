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
  ...crud('specialty', 'a specialty', 'POST /v1/specialties', 'PATCH /v1/specialties/{id}', 'DELETE /v1/specialties/{id}', {
    created: { id: 'the specialty', code: 'its code' },
    updated: { id: 'the specialty', changed: 'names of the changed fields' },
    deleted: { id: 'the specialty', code: 'its code' },
  }),
  {
    type: 'specialist.availability_updated',
    emittedBy: 'PUT /v1/specialists/{id}/availability',
    description: "A specialist's weekly rules or dated exceptions changed.",
    data: { id: 'the specialist', rules: 'how many weekly rules it now has', exceptions: 'how many dated exceptions' },
  },
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
  // Documents (docs/documents.md): PDF templates and the documents made with them. Ids and states only.
  {
    type: 'pdf_template.published',
    emittedBy: 'POST /v1/pdf-templates (version 1), POST /v1/pdf-templates/{id}/publish',
    description: 'A PDF template version was published.',
    data: { id: 'the template', kind: 'form, visit_summary, prescription, report or receipt', version: 'the published version' },
  },
  {
    type: 'pdf_template.updated',
    emittedBy: 'POST /v1/pdf-templates (as a draft), PATCH /v1/pdf-templates/{id}, rollback',
    description: 'The draft of a PDF template changed.',
    data: {
      id: 'the template',
      version: 'its last published version',
      published: 'false',
      rolled_back_to: 'the restored version (rollback only)',
    },
  },
  {
    type: 'pdf_template.deleted',
    emittedBy: 'DELETE /v1/pdf-templates/{id}',
    description: 'A PDF template was deleted; documents made from it stay.',
    data: { id: 'the template' },
  },
  {
    type: 'document.created',
    emittedBy: 'POST /v1/forms/{id}/render, POST /v1/appointments/{id}/documents (a new document, not one that existed)',
    description: 'A document was asked for; it renders inline or on the worker (GET /v1/documents/{id} shows its status).',
    data: {
      id: 'the document',
      kind: 'its template kind',
      patient_id: 'the patient record',
      form_id: 'the form, or null',
      appointment_id: 'the appointment, or null',
      pdf_template_id: 'the template',
      template_version: 'the template version',
    },
  },
  {
    type: 'document.published',
    emittedBy: 'POST /v1/documents/{id}/publish',
    description: 'A document was published to its patient, who may now download it.',
    data: { id: 'the document', kind: 'its template kind', patient_id: 'the patient record' },
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
  // Telerehab (docs/telerehab.md): plans, enrollments and plan sessions. Ids, versions and states; never a score or a note.
  {
    type: 'treatment_plan.created',
    emittedBy: 'POST /v1/treatment-plans, POST /v1/treatment-plans/{id}/duplicate, /clone, /promote',
    description: 'A treatment plan was created as a draft (a copy names its source).',
    data: {
      id: 'the plan',
      kind: 'library or patient',
      patient_id: 'the patient record (patient plans), else null',
      source_plan_id: 'the plan copied (copies only)',
      source_version: 'the version copied (copies only)',
      source_kind: 'duplicate, clone or promote (copies only)',
    },
  },
  {
    type: 'treatment_plan.updated',
    emittedBy: 'PATCH /v1/treatment-plans/{id}; POST /v1/treatment-plans/{id}/rollback',
    description: "A plan's draft changed (edited, or made from a version).",
    data: {
      id: 'the plan',
      version: 'the last published version',
      published: 'false',
      rolled_back_to: 'the version restored (rollbacks only)',
    },
  },
  {
    type: 'treatment_plan.published',
    emittedBy: 'POST /v1/treatment-plans/{id}/publish',
    description: 'A draft was published as the next version; running enrollments stay on the version they pinned.',
    data: { id: 'the plan', version: 'the new version', kind: 'library or patient', patient_id: 'the patient record, or null' },
  },
  {
    type: 'treatment_plan.approved',
    emittedBy: 'POST /v1/treatment-plans/{id}/approve',
    description: "A second clinician approved a plan's draft.",
    data: { id: 'the plan', version: 'the last published version' },
  },
  {
    type: 'treatment_plan.deleted',
    emittedBy: 'DELETE /v1/treatment-plans/{id}',
    description: 'A treatment plan was deleted (soft).',
    data: { id: 'the plan' },
  },
  ...(
    [
      ['created', 'POST /v1/treatment-plans/{id}/enrollments', 'A patient was enrolled in a published version of a plan.'],
      ['paused', 'POST /v1/treatment-plans/enrollments/{id}/pause', 'An enrollment was paused (by staff or the patient).'],
      ['resumed', 'POST /v1/treatment-plans/enrollments/{id}/resume', 'A paused enrollment was resumed.'],
      [
        'cancelled',
        'POST /v1/treatment-plans/enrollments/{id}/cancel; the erasure of its patient',
        'An enrollment was cancelled (or erased with its patient: it is gone then).',
      ],
      ['migrated', 'POST /v1/treatment-plans/enrollments/{id}/migrate', 'An enrollment now follows another version of its plan.'],
    ] as const
  ).map(
    ([what, by, description]): EventType => ({
      type: `enrollment.${what}`,
      emittedBy: by,
      description,
      data: {
        id: 'the enrollment',
        patient_id: 'the patient record',
        treatment_plan_id: 'the plan',
        ...(what === 'created' ? { plan_version: 'the version followed' } : {}),
        ...(what === 'migrated' ? { from_version: 'the version followed before', to_version: 'the version followed now' } : {}),
      },
    }),
  ),
  ...(
    [
      [
        'started',
        'POST /v1/treatment-plans/enrollments/{id}/sessions',
        "The patient started an item of today's plan day (again, for a restart).",
      ],
      [
        'completed',
        'POST /v1/treatment-plans/sessions/{id}/complete',
        'The patient completed a started item (its results are read through the API).',
      ],
      ['skipped', 'POST /v1/treatment-plans/enrollments/{id}/skip', 'The patient skipped an item of today, with a reason.'],
    ] as const
  ).map(
    ([what, by, description]): EventType => ({
      type: `plan_session.${what}`,
      emittedBy: by,
      description,
      data: {
        id: 'the plan session',
        enrollment_id: 'the enrollment',
        patient_id: 'the patient record',
        plan_day: 'the plan day',
        item_index: "the item's position on that day",
        exercise_id: 'the exercise',
        ...(what === 'completed' ? { scored: 'whether telemetry results were stored (never the numbers)' } : {}),
      },
    }),
  ),
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
  {
    type: 'caregiver_link.created',
    emittedBy: 'POST /v1/patients/{id}/caregivers',
    description: 'A person may now act for a patient as its caregiver.',
    data: { id: 'the link', patient_id: 'the patient record', caregiver_user_id: 'the caregiver' },
  },
  {
    type: 'caregiver_link.revoked',
    emittedBy: 'DELETE /v1/patients/{id}/caregivers/{linkId}',
    description: 'A caregiver no longer acts for a patient.',
    data: { id: 'the link', patient_id: 'the patient record', caregiver_user_id: 'the caregiver' },
  },
  ...crud(
    'calendar',
    'a room or device calendar',
    'POST /v1/calendars',
    'PATCH /v1/calendars/{id}; PUT /v1/calendars/{id}/availability',
    'DELETE /v1/calendars/{id}',
    {
      created: { id: 'the calendar', kind: 'room or device' },
      updated: { id: 'the calendar', changed: 'names of the changed fields (availability for its rules)' },
      deleted: { id: 'the calendar' },
    },
  ),
  // Appointments (spec 6.1 names appointment.created and appointment.first_booked). Ids only.
  ...(
    [
      [
        'created',
        'An appointment was booked (by staff, a patient or a guest).',
        'POST /v1/appointments, POST /v1/public/bookings, a reschedule',
      ],
      ['first_booked', "A patient's (or a guest email's) first appointment at the organization was booked.", 'with appointment.created'],
      ['confirmed', 'An appointment was confirmed.', 'PATCH /v1/appointments/{id}'],
      ['checked_in', 'The patient arrived.', 'PATCH /v1/appointments/{id}'],
      ['in_progress', 'The visit started.', 'PATCH /v1/appointments/{id}'],
      ['completed', 'The visit is done.', 'PATCH /v1/appointments/{id}'],
      ['cancelled', 'An appointment was cancelled; its time is free again.', 'PATCH /v1/appointments/{id}; the erasure of its patient'],
      ['rescheduled', 'An appointment moved: a new appointment (to) took the time.', 'PATCH /v1/appointments/{id}'],
      ['no_show', 'Nobody checked in by the end (the sweep) or staff said so.', 'the no-show sweep, PATCH /v1/appointments/{id}'],
      ['deleted', 'A booking that never took place was deleted.', 'DELETE /v1/appointments/{id}'],
    ] as const
  ).map(
    ([t, description, emittedBy]): EventType => ({
      type: `appointment.${t}`,
      emittedBy,
      description,
      data:
        t === 'created' || t === 'first_booked'
          ? {
              id: 'the appointment',
              service_id: 'the service',
              specialist_id: 'the specialist',
              patient_id: 'the patient record (null for a guest)',
              starts_at: 'its start',
            }
          : {
              id: 'the appointment',
              ...(t === 'rescheduled' ? { to: 'the appointment that replaced it', starts_at: 'its new start' } : {}),
            },
    }),
  ),
  {
    type: 'appointment.file_added',
    emittedBy: 'POST /v1/appointments/{id}/files',
    description: 'A file was attached to an appointment (by staff or by its patient).',
    data: { id: 'the appointment', file_id: 'the file' },
  },
  {
    type: 'appointment.file_removed',
    emittedBy: 'DELETE /v1/appointments/{id}/files/{fileId}',
    description: 'A file was removed from an appointment.',
    data: { id: 'the appointment', file_id: 'the file' },
  },
  {
    type: 'appointment.reviewed',
    emittedBy: 'POST /v1/appointments/{id}/reviews',
    description: 'The patient reviewed a visit that is done (read the rating and comment through the API).',
    data: { id: 'the appointment', review_id: 'the review' },
  },
  // The service catalog. `id` is the resource's own id; `changed` names fields, never their values.
  ...crud('service', 'a service', 'POST /v1/services', 'PATCH /v1/services/{id}', 'DELETE /v1/services/{id}', {
    created: { id: 'the service' },
    updated: { id: 'the service', changed: 'names of the changed fields (location_ids, specialist_ids for link changes)' },
    deleted: { id: 'the service' },
  }),
  ...crud('product', 'a product', 'POST /v1/products', 'PATCH /v1/products/{id}', 'DELETE /v1/products/{id}', {
    created: { id: 'the product' },
    updated: { id: 'the product', changed: 'names of the changed fields' },
    deleted: { id: 'the product' },
  }),
  ...crud(
    'service_plan',
    'a service plan',
    'POST /v1/service-plans',
    'PATCH /v1/service-plans/{id}; POST, PATCH, DELETE /v1/service-plans/{id}/products[/{pid}]',
    'DELETE /v1/service-plans/{id}',
    {
      created: { id: 'the service plan' },
      updated: { id: 'the service plan', changed: 'names of the changed fields (services; products for a change of its products)' },
      deleted: { id: 'the service plan' },
    },
  ),
  // Messages, automations and segments (docs/automations.md). Ids and states; never an address or a text.
  ...crud(
    'message_template',
    'a message template',
    'POST /v1/message-templates',
    'PATCH /v1/message-templates/{id}',
    'DELETE /v1/message-templates/{id}',
    {
      created: { id: 'the template', channel: 'email or sms', purpose: 'transactional or marketing' },
      updated: { id: 'the template', changed: 'names of the changed fields' },
      deleted: { id: 'the template' },
    },
  ),
  ...(['sent', 'refused', 'bounced'] as const).map(
    (status): EventType => ({
      type: `message.${status}`,
      emittedBy: 'the worker, when an automation run sends a message',
      description:
        status === 'sent'
          ? 'A message was handed to the provider (or the outbox folder).'
          : status === 'refused'
            ? 'The provider refused the recipient (an unknown address, an opted-out number).'
            : 'The provider refused the message itself.',
      data: {
        id: 'the message',
        channel: 'email or sms',
        patient_id: 'the patient record (null for a guest)',
        run_id: 'the automation run',
      },
    }),
  ),
  ...crud(
    'automation_rule',
    'an automation rule',
    'POST /v1/automation-rules',
    'PATCH /v1/automation-rules/{id} (also pausing and resuming)',
    'DELETE /v1/automation-rules/{id}',
    {
      created: { id: 'the rule', trigger_type: 'event, appointment_offset or schedule', status: 'active or paused' },
      updated: { id: 'the rule', changed: 'names of the changed fields', status: 'active or paused', version: 'its new version' },
      deleted: { id: 'the rule' },
    },
  ),
  {
    type: 'automation.triggered',
    emittedBy: 'the worker: the call_webhooks action of an automation rule',
    description: 'An automation rule fired for a patient (or a guest booking) and asked to tell the webhooks.',
    data: {
      rule_id: 'the rule',
      run_id: 'the run',
      trigger_type: 'event, appointment_offset or schedule',
      patient_id: 'the patient record (null for a guest)',
      appointment_id: 'the appointment, when the trigger concerns one',
    },
  },
  ...crud('segment', 'a segment', 'POST /v1/segments', 'PATCH /v1/segments/{id}', 'DELETE /v1/segments/{id}', {
    created: { id: 'the segment' },
    updated: { id: 'the segment', changed: 'names of the changed fields' },
    deleted: { id: 'the segment' },
  }),
  {
    type: 'segment.evaluated',
    emittedBy: 'POST /v1/segments/{id}/evaluate (at once, or by the background job)',
    description: "A segment's members were materialised.",
    data: { id: 'the segment', evaluation_id: 'the evaluation', member_count: 'how many patients it holds' },
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
export const INTERNAL_TYPES = new Set(['exercise_session.ended', 'document.render_requested']);

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
