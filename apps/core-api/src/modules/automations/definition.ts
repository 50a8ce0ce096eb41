import type { Queryable } from '@clinic/db';
import { errors, isUuid } from '@clinic/http-kit';
import { EVENT_CATALOG } from '../events/catalog.ts';
import { latestPublished } from '../custom-fields/queries.ts';
import { referenceProblems } from '../../platform/references.ts';
import { compileCriteria, CriteriaError } from '../segments/criteria.ts';

/**
 * What a rule may say (docs/automations.md), checked when it is saved: the trigger, the conditions (the
 * segment criteria language, compiled against the organization's field catalog) and the actions, whose
 * templates, form templates and segments must exist in the organization.
 */

export type Trigger =
  | { type: 'event'; event_type: string }
  | { type: 'appointment_offset'; offset_minutes: number; service_ids?: string[] }
  | { type: 'schedule'; segment_id: string; time: string };

export type Action =
  | { type: 'send_email' | 'send_sms'; template_id: string }
  | { type: 'call_webhooks' }
  | { type: 'assign_form'; form_template_id: string }
  | { type: 'add_tag'; tag: string };

export const ACTION_TYPES = ['send_email', 'send_sms', 'call_webhooks', 'assign_form', 'add_tag'] as const;

/** How an event names the patient a rule acts on: its patient_id, its appointment's, or the record itself. */
export type EventTarget = 'patient_id' | 'appointment' | 'patient';

export function eventTarget(type: string): EventTarget | null {
  const entry = EVENT_CATALOG.find((e) => e.type === type);
  if (!entry || type.startsWith('automation') || type.startsWith('message')) return null;
  if (type.startsWith('appointment.') && 'id' in entry.data) return 'appointment';
  if ('patient_id' in entry.data) return 'patient_id';
  if (type.startsWith('patient.') && 'id' in entry.data) return 'patient';
  return null;
}

export const TRIGGERABLE_EVENTS = () => EVENT_CATALOG.map((e) => e.type).filter((t) => eventTarget(t) !== null);

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** One week either side of the start: further than that is a schedule, not a reminder. */
const MAX_OFFSET = 10_080;

export function checkTrigger(t: unknown, problems: Record<string, string>): Trigger | null {
  if (!isObj(t)) {
    problems.trigger = 'an object with type event, appointment_offset or schedule';
    return null;
  }
  const only = (keys: string[]) => {
    const extra = Object.keys(t).filter((k) => !keys.includes(k));
    if (extra.length) problems.trigger = `unknown keys for this trigger type: ${extra.slice(0, 5).join(', ')}`;
  };
  if (t.type === 'event') {
    only(['type', 'event_type']);
    if (typeof t.event_type !== 'string' || !eventTarget(t.event_type)) {
      problems['trigger.event_type'] =
        `an event type of the catalog that concerns a patient or an appointment: ${TRIGGERABLE_EVENTS().join(', ')}`;
      return null;
    }
    return { type: 'event', event_type: t.event_type };
  }
  if (t.type === 'appointment_offset') {
    only(['type', 'offset_minutes', 'service_ids']);
    const off = t.offset_minutes;
    if (!Number.isInteger(off) || (off as number) === 0 || Math.abs(off as number) > MAX_OFFSET) {
      problems['trigger.offset_minutes'] = `whole minutes from the start, not 0, at most ${MAX_OFFSET} either way (-1440: 24 hours before)`;
      return null;
    }
    if (t.service_ids !== undefined) {
      if (!Array.isArray(t.service_ids) || !t.service_ids.length || t.service_ids.length > 100 || !t.service_ids.every((s) => isUuid(s))) {
        problems['trigger.service_ids'] = 'a list of service ids (omit for every service)';
        return null;
      }
      return {
        type: 'appointment_offset',
        offset_minutes: off as number,
        service_ids: (t.service_ids as string[]).map((s) => s.toLowerCase()),
      };
    }
    return { type: 'appointment_offset', offset_minutes: off as number };
  }
  if (t.type === 'schedule') {
    only(['type', 'segment_id', 'time']);
    if (!isUuid(t.segment_id)) problems['trigger.segment_id'] = 'the id of a segment';
    if (typeof t.time !== 'string' || !/^([01]\d|2[0-3]):[0-5]\d$/.test(t.time))
      problems['trigger.time'] = 'a local time HH:MM (every day, in the organization zone)';
    if (problems['trigger.segment_id'] || problems['trigger.time']) return null;
    return { type: 'schedule', segment_id: (t.segment_id as string).toLowerCase(), time: t.time as string };
  }
  problems['trigger.type'] = 'event, appointment_offset or schedule';
  return null;
}

/** The actions in their positions; null where one is wrong (its problem is in `problems`). */
export function checkActions(list: unknown, problems: Record<string, string>): (Action | null)[] {
  if (!Array.isArray(list) || list.length < 1 || list.length > 10) {
    problems.actions = 'a list of 1 to 10 actions';
    return [];
  }
  const out: (Action | null)[] = [];
  list.forEach((a, i) => {
    const at = `actions.${i}`;
    out.push(null);
    if (!isObj(a) || typeof a.type !== 'string' || !(ACTION_TYPES as readonly string[]).includes(a.type)) {
      problems[at] = `an object whose type is one of ${ACTION_TYPES.join(', ')}`;
      return;
    }
    const keys: Record<string, string[]> = {
      send_email: ['type', 'template_id'],
      send_sms: ['type', 'template_id'],
      call_webhooks: ['type'],
      assign_form: ['type', 'form_template_id'],
      add_tag: ['type', 'tag'],
    };
    const extra = Object.keys(a).filter((k) => !keys[a.type as string]!.includes(k));
    if (extra.length) {
      problems[at] = `unknown keys for ${a.type}: ${extra.slice(0, 5).join(', ')}`;
      return;
    }
    if (a.type === 'send_email' || a.type === 'send_sms') {
      if (!isUuid(a.template_id)) problems[`${at}.template_id`] = 'the id of a message template';
      else out[i] = { type: a.type, template_id: a.template_id.toLowerCase() };
    } else if (a.type === 'assign_form') {
      if (!isUuid(a.form_template_id)) problems[`${at}.form_template_id`] = 'the id of a form template';
      else out[i] = { type: 'assign_form', form_template_id: a.form_template_id.toLowerCase() };
    } else if (a.type === 'add_tag') {
      if (typeof a.tag !== 'string' || !/^[a-z0-9][a-z0-9_.-]{0,62}$/.test(a.tag))
        problems[`${at}.tag`] = 'lower-case letters, digits, _ . - (at most 63)';
      else out[i] = { type: 'add_tag', tag: a.tag };
    } else out[i] = { type: 'call_webhooks' };
  });
  return out;
}

/**
 * The ids a rule's body holds (platform/references.ts), declared on its routes; checkReferences names them with
 * the rule's other problems, so the routes leave them to it (referencesInService).
 */
export const RULE_REFERENCES = {
  'trigger.service_ids[]': 'services',
  'trigger.segment_id': 'segments',
  'actions[].template_id': 'message_templates',
  'actions[].form_template_id': 'form_templates',
};

/**
 * The references of a rule, checked in the organization: templates of the right channel, form templates, the
 * segment, the services of an offset trigger.
 */
export async function checkReferences(
  tx: Queryable,
  orgId: string,
  trigger: Trigger | null,
  actions: (Action | null)[],
  problems: Record<string, string>,
) {
  for (const [i, a] of actions.entries()) {
    if (!a) continue;
    if (a.type === 'send_email' || a.type === 'send_sms') {
      const { rows } = await tx.query<{ channel: string }>('select channel from message_templates where organization_id = $1 and id = $2', [
        orgId,
        a.template_id,
      ]);
      const want = a.type === 'send_email' ? 'email' : 'sms';
      if (!rows[0]) problems[`actions.${i}.template_id`] = 'no message template with this id in this organization';
      else if (rows[0].channel !== want) problems[`actions.${i}.template_id`] = `a ${rows[0].channel} template cannot be sent by ${a.type}`;
    } else if (a.type === 'assign_form') {
      const { rows } = await tx.query('select 1 from form_templates where organization_id = $1 and id = $2 and deleted_at is null', [
        orgId,
        a.form_template_id,
      ]);
      if (!rows[0]) problems[`actions.${i}.form_template_id`] = 'no live form template with this id in this organization';
    }
  }
  if (trigger?.type === 'schedule') {
    const { rows } = await tx.query('select 1 from segments where organization_id = $1 and id = $2', [orgId, trigger.segment_id]);
    if (!rows[0]) problems['trigger.segment_id'] = 'no segment with this id in this organization';
  }
  if (trigger?.type === 'appointment_offset' && trigger.service_ids)
    Object.assign(problems, await referenceProblems(tx, orgId, { trigger }, { 'trigger.service_ids[]': 'services' }));
}

/** Conditions are criteria of the segment language over the target patient; compiled here to be sure they run. */
export async function checkConditions(tx: Queryable, orgId: string, conditions: unknown, problems: Record<string, string>): Promise<void> {
  if (conditions === null || conditions === undefined) return;
  const custom = await latestPublished(tx, orgId, { entityType: 'patient' });
  try {
    compileCriteria(conditions, custom, 3, 'conditions');
  } catch (err) {
    if (err instanceof CriteriaError) Object.assign(problems, err.fields);
    else throw err;
  }
}

export function assertNoProblems(problems: Record<string, string>): void {
  if (Object.keys(problems).length) throw errors.validation(problems, 'The rule does not hold together; see fields.');
}
