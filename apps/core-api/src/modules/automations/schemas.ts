import { DateRangeQuery, ListQueryWith, SortParam, Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';
import { IncludeDeletedQuery } from '../../platform/deleted.ts';

export const RULE_SORT = { created_at: 'created_at', name: 'name', status: 'status', updated_at: 'updated_at' } as const;
export const EXECUTION_SORT = { created_at: 'e.created_at', status: 'e.status' } as const;

export const IdParams = Type.Object({ id: Uuid });

const TriggerSchema = Type.Record(Type.String(), Type.Unknown(), {
  description:
    '{ type: "event", event_type } (an event of the catalog about a patient or an appointment); { type: "appointment_offset", offset_minutes, service_ids? } (minutes from the start, -1440 = 24 hours before; follows reschedules, stops at cancellations); { type: "schedule", segment_id, time: "HH:MM" } (every day at that local time, for the members of the segment).',
});
const ConditionsSchema = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'Criteria of the segment language (GET /v1/segment-fields) over the target patient, checked when the run acts; null for none.',
});
const ActionsSchema = Type.Array(Type.Record(Type.String(), Type.Unknown()), {
  minItems: 1,
  maxItems: 10,
  description:
    'In order: { type: "send_email" | "send_sms", template_id }, { type: "call_webhooks" } (emits automation.triggered to the webhook subscriptions), { type: "assign_form", form_template_id }, { type: "add_tag", tag }.',
});

export const Rule = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  name: Type.String(),
  description: nullable(Type.String()),
  status: Type.Union([Type.Literal('active'), Type.Literal('paused')]),
  trigger: Type.Record(Type.String(), Type.Unknown()),
  conditions: nullable(Type.Record(Type.String(), Type.Unknown())),
  actions: Type.Array(Type.Record(Type.String(), Type.Unknown())),
  version: Type.Integer({ description: 'Moves on every change; runs and executions name the version they followed.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const CreateRuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')])),
    trigger: TriggerSchema,
    conditions: Type.Optional(nullable(ConditionsSchema)),
    actions: ActionsSchema,
  },
  { additionalProperties: false },
);

export const UpdateRuleBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('paused')], {
        description: 'paused: nothing new fires, and runs waiting to act end as skipped.',
      }),
    ),
    trigger: Type.Optional(TriggerSchema),
    conditions: Type.Optional(nullable(ConditionsSchema)),
    actions: Type.Optional(ActionsSchema),
  },
  { additionalProperties: false },
);

export const RuleListQuery = ListQueryWith({
  sort: SortParam(RULE_SORT),
  status: Type.Optional(Type.String({ description: '`active` or `paused`.' })),
  trigger_type: Type.Optional(Type.String({ description: '`event`, `appointment_offset` or `schedule`.' })),
  ...DateRangeQuery('created_at'),
  ...IncludeDeletedQuery,
});

export const Execution = Type.Object({
  id: Uuid,
  organization_id: Uuid,
  rule_id: Uuid,
  rule_version: Type.Integer(),
  run_id: Uuid,
  trigger_type: Type.String(),
  trigger_key: nullable(
    Type.String({ description: 'What fired: event:<id>, appointment:<id>@<start>, schedule:<date>; null once erased.' }),
  ),
  target: nullable(Type.String({ description: 'patient:<id> or appointment:<id> (a guest); null once erased.' })),
  action_index: Type.Integer(),
  action_type: Type.String(),
  status: Type.String({ description: '`succeeded`, `failed` (after its attempts) or `skipped` (see error for why).' }),
  attempts: Type.Integer(),
  error: nullable(Type.String()),
  message_id: nullable(Uuid),
  created_at: Timestamp,
});

export const ExecutionListQuery = ListQueryWith({
  sort: SortParam(EXECUTION_SORT),
  rule_id: Type.Optional(Type.String()),
  run_id: Type.Optional(Type.String()),
  status: Type.Optional(Type.String()),
  action_type: Type.Optional(Type.String()),
  patient_id: Type.Optional(Type.String({ description: 'Executions of runs that targeted this patient.' })),
  ...DateRangeQuery('created_at'),
});

export const Settings = Type.Object({
  quiet_hours_start: nullable(Type.String({ description: 'HH:MM local time (organization_settings.default_timezone); null: none.' })),
  quiet_hours_end: nullable(Type.String()),
  time_zone: Type.String({ description: "The organization's zone (read only here)." }),
});

export const PutSettingsBody = Type.Object(
  {
    quiet_hours_start: nullable(Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' })),
    quiet_hours_end: nullable(Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' })),
  },
  { additionalProperties: false },
);
