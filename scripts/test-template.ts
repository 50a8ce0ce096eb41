/**
 * The migrated database a test run starts every test database from (scripts/run-tests.mjs):
 *
 *   create <admin url | -> <folder>   migrates a template and prints its name for TEST_DB_TEMPLATE
 *   drop <admin url | -> <template>   drops it (a PGlite image is a file of the run's folder)
 *
 * `-` stands for the embedded mode (PGlite).
 */
import { createTestTemplate, dropTestTemplate } from '@clinic/db';

const [command, admin, arg] = process.argv.slice(2);
const adminUrl = admin === '-' ? null : (admin ?? null);
if (command === 'create' && arg) process.stdout.write(await createTestTemplate(adminUrl, arg));
else if (command === 'drop' && arg) await dropTestTemplate(adminUrl, arg);
else {
  console.error('usage: test-template.ts create|drop <admin url | -> <folder | template>');
  process.exit(2);
}
