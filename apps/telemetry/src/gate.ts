import { AppError, errors } from '@clinic/http-kit';

/** Maps a refusal of app.telemetry_gate (migration 0050) to the spec's error (spec 4.6 rule 4, 7). */
export function gateError(status: string, purpose: 'analytics' | 'biometric'): AppError | null {
  switch (status) {
    case 'ok':
      return null;
    case 'consent_required':
      return new AppError(
        403,
        'consent_required',
        `This needs an active ${purpose} consent at the organization; grant it with POST /v1/me/consents.`,
        {
          extra: { missing_purpose: purpose },
        },
      );
    case 'restricted':
      return new AppError(
        403,
        'processing_restricted',
        `Processing of this person's data is restricted (GDPR art. 18); ${purpose} telemetry is not accepted.`,
        {
          extra: { missing_purpose: purpose },
        },
      );
    case 'not_patient':
      return errors.forbidden('You are not a patient of this organization.');
    case 'session_not_found':
      return errors.notFound('No such session for this caller.');
    case 'session_closed':
      return errors.conflict('session_closed', 'This session has ended; start a new one to send more frames.');
    default:
      return new Error(`unexpected telemetry status ${status}`) as AppError;
  }
}
