/**
 * `npm run schema`: writes engine/model/workflow.schema.json. This script is the one file under engine/
 * that does I/O; the schema itself is built by the pure json-schema.ts.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderWorkflowJsonSchema } from './json-schema.ts';

const target = fileURLToPath(new URL('./workflow.schema.json', import.meta.url));
writeFileSync(target, renderWorkflowJsonSchema());
process.stdout.write(`wrote ${target}\n`);
