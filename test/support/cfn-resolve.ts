/**
 * CloudFormation's intrinsic functions as far as stepthread's templates use them (Ref, Fn::GetAtt .Arn,
 * Fn::Join, Fn::Sub), resolved as CloudFormation does, so a test sees what a deploy would. Fn::Sub
 * follows CloudFormation to the letter: a variable ends at the first `}`, and `${!text}` is the literal
 * `${text}` (up to that same first `}`).
 */

export type PhysicalResources = ReadonlyMap<string, { ref: string; arn?: string }>;

export function cfnResolver(
  physical: PhysicalResources,
  where: { account: string; region: string },
): (value: unknown) => unknown {
  const pseudo: Record<string, string> = {
    'AWS::AccountId': where.account,
    'AWS::Region': where.region,
    'AWS::Partition': 'aws',
    'AWS::URLSuffix': 'amazonaws.com',
  };
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(resolve);
    if (value === null || typeof value !== 'object') return value;
    const object = value as Record<string, unknown>;
    if ('Ref' in object) {
      const name = String(object.Ref);
      const found = pseudo[name] ?? physical.get(name)?.ref;
      if (found === undefined) throw new Error(`cannot resolve Ref ${name}`);
      return found;
    }
    if ('Fn::GetAtt' in object) {
      const [name, attribute] = object['Fn::GetAtt'] as [string, string];
      const found = attribute === 'Arn' ? physical.get(name)?.arn : undefined;
      if (found === undefined) throw new Error(`cannot resolve GetAtt ${name}.${attribute}`);
      return found;
    }
    if ('Fn::Join' in object) {
      const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
      return parts.map((part) => String(resolve(part))).join(separator);
    }
    if ('Fn::Sub' in object) {
      const [text, variables] = (
        Array.isArray(object['Fn::Sub']) ? object['Fn::Sub'] : [object['Fn::Sub'], {}]
      ) as [string, Record<string, unknown>];
      return text.replace(/\$\{(!?)([^}]*)\}/g, (_whole, literal: string, name: string) => {
        if (literal) return `\${${name}}`;
        return String(resolve(name in variables ? variables[name] : { Ref: name }));
      });
    }
    return Object.fromEntries(Object.entries(object).map(([key, inner]) => [key, resolve(inner)]));
  };
  return resolve;
}
