import type { TestApp } from '../helpers.ts';

/*
 * The permission matrix's shared shapes. Modules add their operations in a fragment file beside this
 * one (`matrix/<module>.ts`, exporting `entries: Fragment`); permission-matrix.test.ts loads every
 * fragment, so new modules never edit the central table. The header comment of
 * permission-matrix.test.ts says how each expectation derives from the spec; a fragment's own
 * header says the same for its rows.
 */

export const CALLERS = [
  'admin',
  'specialist',
  'customer_support',
  'patient',
  'non_member',
  'other_org_admin',
  'superadmin',
  'anonymous',
] as const;
export type Caller = (typeof CALLERS)[number];
/** An expected status, or one with a todo: a known bug, reported, that must not turn the run red. */
export type Expect = number | { status: number; todo: string };
export type Row = Record<Caller, Expect>;

/** The operator surface's row: a superadmin gets `ok`, every signed-in caller 403, no token 401. */
export const superadminOnly = (ok: number): Row => ({
  admin: 403,
  specialist: 403,
  customer_support: 403,
  patient: 403,
  non_member: 403,
  other_org_admin: 403,
  superadmin: ok,
  anonymous: 401,
});

/** What the cells share: one organization under test, its callers, and resources that no cell destroys. */
export interface Fixture {
  orgId: string;
  orgSlug: string;
  tokens: Record<Exclude<Caller, 'anonymous'>, string>;
  /** A superadmin with no break-glass session at the organization under test (spec 4.7). */
  superadminWithoutSession: string;
  /** Setup calls, as a superadmin unless a token is given: fresh resources for cells that change or delete one. */
  setup(method: string, url: string, body?: unknown, token?: string): Promise<any>;
  /** The patients row of the patient caller (consent staff routes take the patient record id). */
  patientRecordId: string;
  /** A fresh patients row id at the organization under test (for cells that erase one). */
  freshPatientRecord(): Promise<string>;
  /** A finished export job of the patient caller (its own data). */
  patientExportId(): Promise<string>;
  /** The published version of marketing_email in effect at the organization (grants must name it). */
  emailVersion: number;
  locationId: string;
  domainId: string;
  roleId: string;
  /** The test app itself, for fragments that need a direct database read or a helper such as addPatient. */
  t: TestApp;
}

export interface Prepared {
  /** Values of the path's {params}; `id` defaults to the organization under test. */
  params?: Record<string, string>;
  query?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** How to call an operation validly: its method and OpenAPI path (checked against /openapi.json), and what to send. */
export interface RequestSpec {
  method: string;
  path: string;
  prepare?: (f: Fixture, caller: Caller) => Promise<Prepared> | Prepared;
}

/** One operation of a fragment: its expected statuses per caller and how to call it. */
export interface MatrixEntry {
  row: Row;
  request: RequestSpec;
}
export type Fragment = Record<string, MatrixEntry>;
