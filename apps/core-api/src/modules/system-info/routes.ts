import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DataOf } from '@clinic/http-kit';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../../config.ts';

/**
 * Manufacturer and device-labelling data (the software's label as a medical device). Every field is
 * configuration, documented in docs/operations.md; nothing is computed.
 */
const SystemInfo = Type.Object({
  manufacturer_name: Type.String({ description: 'Legal manufacturer (SYSTEM_MANUFACTURER_NAME)' }),
  manufacturer_address: Type.String({ description: 'Registered postal address of the manufacturer (SYSTEM_MANUFACTURER_ADDRESS)' }),
  product_name: Type.String({ description: 'Trade name of the device (SYSTEM_PRODUCT_NAME)' }),
  version: Type.String({ description: 'Software version as labelled (SYSTEM_PRODUCT_VERSION)' }),
  udi_di: Type.String({ description: 'Unique Device Identifier, device identifier part; empty until assigned (SYSTEM_UDI_DI)' }),
  regulatory_marks: Type.Array(Type.String(), {
    description: 'Conformity marks, e.g. "CE 0123" (SYSTEM_REGULATORY_MARKS, comma-separated)',
  }),
  manufacture_date: Type.String({ description: 'Date of manufacture of this release, YYYY-MM-DD or empty (SYSTEM_MANUFACTURE_DATE)' }),
  instructions_url: Type.String({ description: 'Where the electronic instructions for use are published (SYSTEM_INSTRUCTIONS_URL)' }),
  support_email: Type.String({ description: 'Contact for vigilance and support (SYSTEM_SUPPORT_EMAIL)' }),
});

export function systemInfoRoutes(app: FastifyInstance, info: Config['systemInfo']): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/v1/public/system-info',
    {
      config: { public: true },
      schema: {
        operationId: 'getSystemInfo',
        tags: ['public'],
        summary: 'Manufacturer and device-labelling data',
        response: { 200: DataOf(SystemInfo) },
      },
    },
    async () => ({ data: info }),
  );
}
