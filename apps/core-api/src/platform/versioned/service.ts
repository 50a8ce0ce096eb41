import type { Queryable } from '@clinic/db';
import { type AppError, errors, type ListEnvelope, listEnvelope, parsePagination, parseSort } from '@clinic/http-kit';
import type { OrgActor } from '../actor.ts';
import { audit } from '../audit.ts';
import { emit } from '../../modules/events/emit.ts';
import type { VersionQueries, VersionRow } from './queries.ts';
import { VERSION_SORT } from './schemas.ts';

/** The state columns every versioned resource has (spec 2.10: version, published, published_at). */
export interface VersionedRow {
  id: string;
  version: number;
  published: boolean;
  published_at: Date;
}
export interface VersionState {
  version: number;
  published: boolean;
  /** Sets published_at to now. */
  publishedNow: boolean;
}

/**
 * What one versioned resource gives the shared lifecycle (spec 3.1, 9.6): how to read, lock and save its
 * row, what its snapshot is, and its names. Its own payload and validation stay in its module.
 */
export interface Versioned<Row extends VersionedRow, K extends string, S> {
  /** Audit entity type and event prefix: custom_field, form_template. */
  entity: string;
  /** In messages: "custom field", and the short name in "change the field first". */
  noun: string;
  shortNoun: string;
  notFound: () => AppError;
  versions: VersionQueries<K, S>;
  /** The snapshot's name in audit data (as in version rows). */
  snapshotKey: K;
  find(tx: Queryable, orgId: string, id: string, opts?: { forUpdate?: boolean }): Promise<Row | null>;
  save(tx: Queryable, orgId: string, id: string, content: S, state: VersionState): Promise<Row>;
  contentOf(row: Row): S;
  /** Checks the content again at publishing (what it links to may have changed since the draft was saved). */
  recheck?(tx: Queryable, orgId: string, content: S): Promise<S>;
  /** A stored snapshot as the resource's content (defaults for fields added since it was taken). */
  restore?(snapshot: S): S;
  /** What the published event adds to `{ id, version }`. */
  eventData?(row: Row): Record<string, unknown>;
  /**
   * Whether the published entry of the audit trail carries the content (default yes). No for content about
   * one person (a patient's treatment plan): the trail is append-only and erasure cannot reach it.
   */
  auditsContent?(row: Row): boolean;
}

export interface VersionLifecycle<Row, K extends string, S> {
  publish(tx: Queryable, actor: OrgActor, id: string): Promise<Row>;
  rollback(tx: Queryable, actor: OrgActor, id: string, version: number): Promise<Row>;
  listVersions(tx: Queryable, orgId: string, id: string, query: Record<string, unknown>): Promise<ListEnvelope<VersionRow<K, S>>>;
  getVersion(tx: Queryable, orgId: string, id: string, version: string): Promise<VersionRow<K, S>>;
  /** Archives the row's current content as its version (at creation and at publishing). */
  archive(tx: Queryable, actor: OrgActor, row: Row): Promise<void>;
}

/** Publish, rollback and the version reads of a versioned resource, written once. */
export function versionLifecycle<Row extends VersionedRow, K extends string, S>(v: Versioned<Row, K, S>): VersionLifecycle<Row, K, S> {
  const noVersion = (version: number | string) => errors.notFound(`This ${v.noun} has no version ${version}.`);
  const existing = async (tx: Queryable, orgId: string, id: string, forUpdate = false) => {
    const row = await v.find(tx, orgId, id, { forUpdate });
    if (!row) throw v.notFound();
    return row;
  };
  const archive = (tx: Queryable, actor: OrgActor, row: Row) =>
    v.versions.insert(tx, actor.orgId, row, v.contentOf(row), actor.ctx.principalId);

  return {
    archive,

    /** Spec 3.1 draft -> published, version + 1: the draft is archived as the new version, published_at set. */
    async publish(tx, actor, id) {
      const current = await existing(tx, actor.orgId, id, true);
      if (current.published)
        throw errors.conflict(
          'already_published',
          `Version ${current.version} is published and there is no draft; change the ${v.shortNoun} first.`,
        );
      const draft = v.contentOf(current);
      const content = v.recheck ? await v.recheck(tx, actor.orgId, draft) : draft;
      const row = await v.save(tx, actor.orgId, id, content, { version: current.version + 1, published: true, publishedNow: true });
      await archive(tx, actor, row);
      await audit(tx, actor, `${v.entity}.published`, v.entity, id, {
        version: row.version,
        ...((v.auditsContent?.(row) ?? true) ? { [v.snapshotKey]: v.contentOf(row) } : {}),
      });
      await emit(tx, actor.orgId, `${v.entity}.published`, { id, ...v.eventData?.(row), version: row.version });
      return row;
    },

    /** Spec 3.1 any -> draft: that version's snapshot becomes the draft; publishing it makes the next number. */
    async rollback(tx, actor, id, version) {
      const current = await existing(tx, actor.orgId, id, true);
      const snap = await v.versions.find(tx, actor.orgId, id, version);
      if (!snap) throw noVersion(version);
      const content = v.restore ? v.restore(snap[v.snapshotKey]) : snap[v.snapshotKey];
      const row = await v.save(tx, actor.orgId, id, content, { version: current.version, published: false, publishedNow: false });
      await audit(tx, actor, `${v.entity}.rolled_back`, v.entity, id, { to_version: version, version: row.version });
      await emit(tx, actor.orgId, `${v.entity}.updated`, { id, version: row.version, published: false, rolled_back_to: version });
      return row;
    },

    async listVersions(tx, orgId, id, query) {
      await existing(tx, orgId, id);
      const page = parsePagination(query);
      const sort = parseSort(query.sort, VERSION_SORT, '-version', 'version');
      const { rows, total } = await v.versions.list(tx, orgId, id, page, sort.sql);
      return listEnvelope(rows, page, total);
    },

    async getVersion(tx, orgId, id, version) {
      await existing(tx, orgId, id);
      const n = /^[1-9]\d{0,8}$/.test(version) ? Number(version) : null;
      const row = n ? await v.versions.find(tx, orgId, id, n) : null;
      if (!row) throw noVersion(version);
      return row;
    },
  };
}
