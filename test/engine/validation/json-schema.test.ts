import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  renderWorkflowJsonSchema,
  schemaReference,
  WORKFLOW_SCHEMA_PATH,
} from '../../../engine/model/json-schema.ts';

const root = join(import.meta.dirname, '..', '..', '..');

describe('workflow JSON Schema', () => {
  it('matches the committed engine/model/workflow.schema.json (run `npm run schema` if this fails)', () => {
    const committed = readFileSync(join(root, WORKFLOW_SCHEMA_PATH), 'utf8');
    expect(renderWorkflowJsonSchema() === committed, 'run npm run schema').toBe(true);
  });

  it('is stable from one generation to the next', () => {
    expect(renderWorkflowJsonSchema()).toBe(renderWorkflowJsonSchema());
  });

  it('describes the node types and allows a $schema reference', () => {
    const schema = JSON.parse(renderWorkflowJsonSchema());
    expect(schema.required).toEqual(expect.arrayContaining(['id', 'version', 'nodes']));
    expect(schema.properties.$schema).toEqual({ type: 'string' });
    expect(JSON.stringify(schema)).toContain('"CONTEXT_PROCESSOR"');
  });

  it('gives the relative $schema reference for a file directory', () => {
    expect(schemaReference('examples')).toBe('../engine/model/workflow.schema.json');
    expect(schemaReference('test/fixtures/valid')).toBe('../../../engine/model/workflow.schema.json');
  });
});
