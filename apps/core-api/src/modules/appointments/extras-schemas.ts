import { Timestamp, Uuid, nullable } from '@clinic/http-kit';
import { Type } from 'typebox';

export const AppointmentFile = Type.Object(
  {
    id: Uuid,
    appointment_id: Uuid,
    filename: Type.String(),
    content_type: Type.String(),
    size_bytes: Type.Integer(),
    sha256: Type.String(),
    uploaded_by: Type.String({
      description: 'staff or patient: the side that added it (a patient removes only the files its side added).',
    }),
    created_at: Timestamp,
  },
  { $id: 'AppointmentFile' },
);
export const AppointmentFileParams = Type.Object({ id: Uuid, fileId: Uuid });

export const AppointmentReview = Type.Object(
  {
    id: Uuid,
    appointment_id: Uuid,
    patient_id: Uuid,
    rating: Type.Integer({ minimum: 1, maximum: 5 }),
    comment: nullable(Type.String()),
    created_at: Timestamp,
  },
  { $id: 'AppointmentReview' },
);
export const CreateReviewBody = Type.Object(
  {
    rating: Type.Integer({ minimum: 1, maximum: 5, description: '1 (poor) to 5 (excellent).' }),
    comment: Type.Optional(nullable(Type.String({ maxLength: 2000 }))),
  },
  { additionalProperties: false },
);
