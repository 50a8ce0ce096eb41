import type { AssetStore } from '@clinic/assets';
import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import type { OrgActor } from '../../platform/actor.ts';
import { audit } from '../../platform/audit.ts';
import { addFile, type FileLimits, type InTx, removeFile, type Upload } from '../../platform/file-store.ts';
import { hasPermission, isPatientCaller } from '../../platform/identity/context.ts';
import { emit } from '../events/emit.ts';
import * as x from './extras-queries.ts';
import * as q from './queries.ts';

/*
 * Appointment files (spec 4.5 Appointments): the form files' store, limits and sniffing
 * (platform/file-store.ts). Staff who may update the appointment (appointments.update_org, or
 * update_own for its specialist) and its patient (or caregiver) add files; whoever reads the
 * appointment reads them. The patient removes only what its side added; staff remove any. A cancelled
 * or rescheduled appointment takes no new file (409 appointment_closed); a reschedule carries the files
 * to the new appointment (migration 0068).
 */

const notFound = () => errors.notFound('No appointment with this id in this organization.');
const fileNotFound = () => errors.notFound('No file with this id on this appointment.');
const CLOSED = new Set<q.Status>(['cancelled', 'rescheduled']);

/** The appointment as the caller sees it (row-level security), or 404. */
export async function visibleAppointment(tx: Queryable, orgId: string, id: string): Promise<q.AppointmentRow> {
  const row = await q.findAppointment(tx, orgId, id);
  if (!row) throw notFound();
  return row;
}

/** From which side the caller acts on the appointment's files: staff who may update it, its patient, or neither. */
async function sideOf(tx: Queryable, actor: OrgActor, row: q.AppointmentRow): Promise<'staff' | 'patient' | null> {
  const ctx = actor.ctx;
  if (hasPermission(ctx, 'appointments.update_org')) return 'staff';
  if (hasPermission(ctx, 'appointments.update_own') && row.specialist_id !== null) {
    const { rows } = await tx.query<{ id: string | null }>('select app.own_specialist_id() as id');
    if (rows[0]?.id === row.specialist_id) return 'staff';
  }
  // A patient caller sees only its own appointments (or, as a caregiver, those of the patient it acts for).
  return isPatientCaller(ctx) ? 'patient' : null;
}

async function attachable(tx: Queryable, actor: OrgActor, id: string) {
  const row = await visibleAppointment(tx, actor.orgId, id);
  const side = await sideOf(tx, actor, row);
  if (!side)
    throw errors.forbidden(
      'Files of this appointment are added by staff who may update it (appointments.update_org or update_own), or by its patient.',
    );
  if (CLOSED.has(row.status))
    throw errors.conflict(
      'appointment_closed',
      `A ${row.status} appointment takes no new files; attach them to the appointment that took its place.`,
    );
  return side;
}

/** POST /v1/appointments/{id}/files: checked, stored, then recorded (the object is removed again if that fails). */
export function addAppointmentFile(
  inTx: InTx,
  assets: AssetStore,
  limits: FileLimits,
  actor: OrgActor,
  id: string,
  getUpload: () => Promise<Upload | undefined>,
) {
  return addFile(inTx, assets, limits, getUpload, {
    keyOf: (fileId) => `orgs/${actor.orgId}/appointments/${id}/${fileId}`,
    check: (tx) => attachable(tx, actor, id),
    record: async (tx, f, side) => {
      const row = await x.insertFile(tx, actor.orgId, {
        ...f,
        appointment_id: id,
        uploaded_by: side,
        uploaded_by_principal_id: actor.ctx.principalId,
      });
      await audit(tx, actor, 'appointment.file_added', 'appointment', id, {
        file_id: f.id,
        content_type: f.content_type,
        size_bytes: f.size_bytes,
        sha256: f.sha256,
      });
      await emit(tx, actor.orgId, 'appointment.file_added', { id, file_id: f.id });
      return row;
    },
  });
}

/** The appointment's files, and whose appointment it is (for the access log). */
export async function listAppointmentFiles(tx: Queryable, orgId: string, id: string) {
  const row = await visibleAppointment(tx, orgId, id);
  return { patientId: row.patient_id, files: await x.listFiles(tx, orgId, id) };
}

export async function openAppointmentFile(tx: Queryable, assets: AssetStore, orgId: string, id: string, fileId: string) {
  const appointment = await visibleAppointment(tx, orgId, id);
  const row = await x.findFile(tx, orgId, id, fileId);
  if (!row) throw fileNotFound();
  const body = await assets.get(row.asset_key);
  if (!body) throw errors.notFound('The file is missing from the asset store.');
  return { row, body, patientId: appointment.patient_id };
}

/** DELETE /v1/appointments/{id}/files/{fileId}: the row in a transaction, the object after commit. */
export async function removeAppointmentFile(inTx: InTx, assets: AssetStore, actor: OrgActor, id: string, fileId: string) {
  await removeFile(inTx, assets, async (tx) => {
    const row = await visibleAppointment(tx, actor.orgId, id);
    const side = await sideOf(tx, actor, row);
    if (!side) throw errors.forbidden('Files of this appointment are removed by staff who may update it, or by its patient.');
    const file = await x.findFile(tx, actor.orgId, id, fileId);
    if (!file) throw fileNotFound();
    if (side === 'patient' && file.uploaded_by !== 'patient')
      throw errors.forbidden('A patient removes only the files it added; ask the clinic to remove this one.');
    if (!(await x.deleteFile(tx, actor.orgId, id, fileId))) throw fileNotFound();
    await audit(tx, actor, 'appointment.file_removed', 'appointment', id, { file_id: fileId, sha256: file.sha256 });
    await emit(tx, actor.orgId, 'appointment.file_removed', { id, file_id: fileId });
    return file.asset_key;
  });
}
