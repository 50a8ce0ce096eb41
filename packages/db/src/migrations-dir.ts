import { fileURLToPath } from 'node:url';

/** The numbered `.sql` files of the platform schema, shared by every service and the CLI. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));
