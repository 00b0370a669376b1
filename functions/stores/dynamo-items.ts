/** Small helpers shared by the DynamoDB stores. */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RESERVED_ATTRIBUTES } from './table.ts';

export interface TableRef {
  readonly dynamo: DynamoDBDocumentClient;
  readonly tableName: string;
}

export function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

const reserved = new Set<string>(RESERVED_ATTRIBUTES);

/** The entity's own fields: the item minus keys and store bookkeeping. */
export function entityOf<T>(item: Record<string, unknown>): T {
  const entity: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(item)) if (!reserved.has(name)) entity[name] = value;
  return entity as T;
}

/** Builds ExpressionAttributeNames/Values with short generated placeholders. */
export class ExpressionBuilder {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly nameOf = new Map<string, string>();
  private valueCount = 0;

  name(attribute: string): string {
    let placeholder = this.nameOf.get(attribute);
    if (!placeholder) {
      placeholder = `#n${this.nameOf.size}`;
      this.nameOf.set(attribute, placeholder);
      this.names[placeholder] = attribute;
    }
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = value;
    return placeholder;
  }
}
