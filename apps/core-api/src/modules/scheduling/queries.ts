import type { Queryable } from '@clinic/db';

/** A service as booking needs it, with who delivers it and where. */
export interface BookableService {
  id: string;
  name: string;
  duration_minutes: number;
  buffer_before_minutes: number;
  buffer_after_minutes: number;
  min_notice_minutes: number;
  max_days_ahead: number;
  cancellation_window_minutes: number;
  mode: 'in_person' | 'video' | 'phone';
  is_public: boolean;
  slot_interval_minutes: number | null;
  /** The form a booking answers (its intake questions), if any. */
  intake_form_template_id: string | null;
  location_ids: string[];
  /** Live specialists who deliver it, and which of them the public booking page may offer. */
  specialists: { id: string; bookable_online: boolean }[];
}

// Every statement names the organization: the public routes run on app_bypass, where no policy narrows rows.

export async function findBookableService(tx: Queryable, orgId: string, serviceId: string): Promise<BookableService | null> {
  const { rows } = await tx.query<BookableService>(
    `select v.id, v.name, v.duration_minutes, v.buffer_before_minutes, v.buffer_after_minutes, v.min_notice_minutes, v.max_days_ahead,
            v.cancellation_window_minutes, v.mode, v.is_public, v.slot_interval_minutes, v.intake_form_template_id,
            array(select l.location_id from service_locations l where l.organization_id = v.organization_id and l.service_id = v.id
                  order by l.location_id) as location_ids,
            coalesce((select json_agg(json_build_object('id', s.id, 'bookable_online', s.bookable_online) order by s.id)
                      from service_specialists l join specialists s on s.organization_id = l.organization_id and s.id = l.specialist_id
                      where l.organization_id = v.organization_id and l.service_id = v.id and s.deleted_at is null), '[]'::json) as specialists
     from services v where v.organization_id = $1 and v.id = $2`,
    [orgId, serviceId],
  );
  return rows[0] ?? null;
}

export interface HoldRow {
  id: string;
  organization_id: string;
  service_id: string;
  specialist_id: string;
  location_id: string | null;
  starts_at: Date;
  ends_at: Date;
  secret_hash: string;
  status: 'live' | 'released' | 'converted' | 'expired';
  expires_at: Date;
  appointment_id: string | null;
}

const HOLD_COLUMNS =
  'id, organization_id, service_id, specialist_id, location_id, starts_at, ends_at, secret_hash, status, expires_at, appointment_id';

export async function insertHold(
  tx: Queryable,
  h: {
    orgId: string;
    serviceId: string;
    specialistId: string;
    locationId: string | null;
    start: Date;
    end: Date;
    secretHash: string;
    minutes: number;
    ip: string | null;
  },
): Promise<HoldRow> {
  const { rows } = await tx.query<HoldRow>(
    `insert into holds (organization_id, service_id, specialist_id, location_id, starts_at, ends_at, secret_hash, expires_at, created_ip)
     values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(mins => $8), $9) returning ${HOLD_COLUMNS}`,
    [h.orgId, h.serviceId, h.specialistId, h.locationId, h.start, h.end, h.secretHash, h.minutes, h.ip],
  );
  return rows[0]!;
}

/** A hold by id (anywhere: the id is the public handle), locked when asked. Expired live holds read as expired. */
export async function findHold(tx: Queryable, id: string, forUpdate = false): Promise<HoldRow | null> {
  const { rows } = await tx.query<HoldRow>(
    `select id, organization_id, service_id, specialist_id, location_id, starts_at, ends_at, secret_hash,
            case when status = 'live' and expires_at <= now() then 'expired' else status end as status, expires_at, appointment_id
     from holds where id = $1${forUpdate ? ' for update' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

/** Ends a hold (released, converted or expired) and frees its claim unless it became an appointment's. */
export async function endHold(
  tx: Queryable,
  orgId: string,
  id: string,
  status: 'released' | 'converted' | 'expired',
  appointmentId: string | null = null,
): Promise<void> {
  await tx.query(`update holds set status = $3, ended_at = now(), appointment_id = $4 where organization_id = $1 and id = $2`, [
    orgId,
    id,
    status,
    appointmentId,
  ]);
  if (status !== 'converted')
    await tx.query('update calendar_claims set active = false where organization_id = $1 and hold_id = $2 and active', [orgId, id]);
}

/** Live holds and their claims whose time is up (the sweep; a hold's claim stops counting at expiry anyway). */
export async function expireHolds(tx: Queryable): Promise<{ organization_id: string; id: string }[]> {
  const { rows } = await tx.query<{ organization_id: string; id: string }>(
    `with ended as (
       update holds set status = 'expired', ended_at = now() where status = 'live' and expires_at <= now()
       returning organization_id, id
     ), freed as (
       update calendar_claims c set active = false from ended e
       where c.organization_id = e.organization_id and c.hold_id = e.id and c.active
     )
     select organization_id, id from ended`,
  );
  return rows;
}

/** What a hold stream follows: the status as stored and the milliseconds left by the database's clock. */
export interface HoldState {
  id: string;
  organization_id: string;
  status: HoldRow['status'];
  appointment_id: string | null;
  expires_at: Date;
  ms_left: number;
}

const STATE_COLUMNS = `id, organization_id, status, appointment_id, expires_at,
  (extract(epoch from expires_at - clock_timestamp()) * 1000)::float8 as ms_left`;

/** A hold by id with its secret's hash, for opening its stream. */
export async function findHoldState(tx: Queryable, id: string): Promise<(HoldState & { secret_hash: string }) | null> {
  const { rows } = await tx.query<HoldState & { secret_hash: string }>(`select ${STATE_COLUMNS}, secret_hash from holds where id = $1`, [
    id,
  ]);
  return rows[0] ?? null;
}

export interface HoldKey {
  organization_id: string;
  id: string;
}

const keyParams = (keys: readonly HoldKey[]) => [keys.map((k) => k.organization_id), keys.map((k) => k.id)];

/** The states of many holds in one statement (what one instance's streams follow); a missing hold has no row. */
export async function holdStates(tx: Queryable, keys: readonly HoldKey[]): Promise<HoldState[]> {
  const { rows } = await tx.query<HoldState>(
    `select ${STATE_COLUMNS} from holds where (organization_id, id) in (select * from unnest($1::uuid[], $2::uuid[]))`,
    keyParams(keys),
  );
  return rows;
}

/**
 * Ends these holds as expired if they are live and past their time, and frees their claims: what the
 * sweep does, for the holds whose streams have reached zero. A booking that locked one first wins (this
 * waits for it and then finds it converted); one that comes after finds it expired (409 hold_ended).
 */
export async function expireDueHolds(tx: Queryable, keys: readonly HoldKey[]): Promise<void> {
  await tx.query(
    `with ended as (
       update holds set status = 'expired', ended_at = now()
       where (organization_id, id) in (select * from unnest($1::uuid[], $2::uuid[])) and status = 'live' and expires_at <= now()
       returning organization_id, id
     )
     update calendar_claims c set active = false from ended e
     where c.organization_id = e.organization_id and c.hold_id = e.id and c.active`,
    keyParams(keys),
  );
}
