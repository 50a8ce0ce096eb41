import { Timestamp, Uuid } from '@clinic/http-kit';
import { Type } from 'typebox';

const Verification = Type.Object(
  {
    type: Type.Literal('TXT'),
    name: Type.String({ description: 'Where to publish the record: `<DOMAIN_VERIFICATION_PREFIX>.<domain>`.' }),
    value: Type.String({ description: 'The exact text of the TXT record.' }),
  },
  { description: 'The DNS record that proves control of the domain.' },
);

export const Domain = Type.Object(
  {
    id: Uuid,
    domain: Type.String({ description: 'Lower-case host name, without a trailing dot.' }),
    verified: Type.Boolean({ description: 'Only verified domains resolve through GET /v1/public/organizations/resolve.' }),
    verified_at: Type.Union([Timestamp, Type.Null()]),
    created_at: Timestamp,
    verification: Verification,
  },
  { $id: 'OrganizationDomain' },
);

export const VerifyResult = Type.Object({
  ...Domain.properties,
  reason: Type.Optional(Type.String({ description: 'Present when verified is false: what was found and which record to publish.' })),
});

export const AddDomainBody = Type.Object(
  {
    domain: Type.String({
      minLength: 1,
      maxLength: 300,
      description:
        'A host name such as clinic.example.com: no scheme, port or path, not an IP address. Stored in lower case (international names in their xn-- form), a trailing dot removed.',
      examples: ['book.example-clinic.com'],
    }),
  },
  { additionalProperties: false },
);

export const DomainParams = Type.Object({ id: Uuid, domainId: Uuid });
