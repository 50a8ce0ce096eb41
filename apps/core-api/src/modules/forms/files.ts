import type { AssetStore } from '@clinic/assets';
import type { Queryable } from '@clinic/db';
import { errors } from '@clinic/http-kit';
import { audit } from '../../platform/audit.ts';
import { addFile as storeFile, type FileLimits, type InTx, removeFile as removeStored, type Upload } from '../../platform/file-store.ts';
import { emit } from '../events/emit.ts';
import type { OrgActor } from '../../platform/actor.ts';
import * as q from './queries.ts';
import { formNotFound, formSigned, loadForm } from './service.ts';

type FormActor = OrgActor & { patientCaller: boolean };

/** The form must be visible to the caller, live and unsigned before any byte is stored. */
async function writableForm(tx: Queryable, orgId: string, formId: string) {
  const { row } = await loadForm(tx, orgId, formId);
  if (row.status === 'signed') throw formSigned();
  return row;
}

/**
 * POST /v1/forms/{id}/files: checked (form unsigned, size, declared type and magic bytes), stored in
 * the asset store, then recorded in a transaction whose trigger refuses a form signed meanwhile; the
 * stored object is removed again when that transaction fails (platform/file-store.ts).
 */
export async function addFile(
  inTx: InTx,
  assets: AssetStore,
  limits: FileLimits,
  actor: FormActor,
  formId: string,
  getUpload: () => Promise<Upload | undefined>,
) {
  return storeFile(inTx, assets, limits, getUpload, {
    keyOf: (id) => `orgs/${actor.orgId}/forms/${formId}/${id}`,
    check: (tx) => writableForm(tx, actor.orgId, formId),
    record: async (tx, f) => {
      const row = await q.insertFile(tx, actor.orgId, { ...f, form_id: formId, uploaded_by_principal_id: actor.ctx.principalId });
      await audit(tx, actor, 'form.file_added', 'form', formId, {
        file_id: f.id,
        content_type: f.content_type,
        size_bytes: f.size_bytes,
        sha256: f.sha256,
      });
      await emit(tx, actor.orgId, 'form.file_added', { id: formId, file_id: f.id });
      return row;
    },
  });
}

/** The form's files, and whose form it is (for the access log). */
export async function listFormFiles(tx: Queryable, orgId: string, formId: string) {
  const { row } = await loadForm(tx, orgId, formId);
  return { patientId: row.patient_id, files: await q.listFiles(tx, orgId, formId) };
}

export async function openFormFile(tx: Queryable, assets: AssetStore, orgId: string, formId: string, fileId: string) {
  const form = await loadForm(tx, orgId, formId);
  const row = await q.findFile(tx, orgId, formId, fileId);
  if (!row) throw errors.notFound('No file with this id on this form.');
  const body = await assets.get(row.asset_key);
  if (!body) throw errors.notFound('The file is missing from the asset store.');
  return { row, body, patientId: form.row.patient_id };
}

/** DELETE /v1/forms/{id}/files/{fileId}: only while the form is unsigned (409 form_signed). The object goes after commit. */
export async function removeFile(inTx: InTx, assets: AssetStore, actor: FormActor, formId: string, fileId: string): Promise<void> {
  await removeStored(inTx, assets, async (tx) => {
    const { row } = await loadForm(tx, actor.orgId, formId, { forUpdate: true });
    if (row.status === 'signed') throw formSigned();
    const file = await q.findFile(tx, actor.orgId, formId, fileId);
    if (!file) throw errors.notFound('No file with this id on this form.');
    if (!(await q.deleteFile(tx, actor.orgId, formId, fileId))) throw formNotFound();
    await audit(tx, actor, 'form.file_removed', 'form', formId, { file_id: fileId, sha256: file.sha256 });
    await emit(tx, actor.orgId, 'form.file_removed', { id: formId, file_id: fileId });
    return file.asset_key;
  });
}
