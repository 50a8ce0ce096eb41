// `npm run docs:events`: rewrites docs/events.md from the event catalog.
import { writeFileSync } from 'node:fs';
import { eventsMarkdown } from '../apps/core-api/src/modules/events/doc.ts';

writeFileSync(new URL('../docs/events.md', import.meta.url), eventsMarkdown());
process.stdout.write('docs/events.md written\n');
