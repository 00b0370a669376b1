/**
 * cdk-nag (AwsSolutions pack) on every synth, through CDK's Validations API (cdk-nag 3). An
 * unacknowledged finding fails the synth; acknowledgements are made next to the resource they cover.
 */
import { type App, Stack, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';

export function addNagChecks(app: App): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
}

/** Acknowledges one AwsSolutions rule on a construct (and its children), with the reason it is accepted. */
export function acknowledge(construct: IConstruct, ruleId: string, reason: string): void {
  Validations.of(construct).acknowledge({ id: ruleId, reason });
}

/**
 * Acknowledges the AwsSolutions-IAM5 finding of each wildcard resource given (an ARN string, tokens
 * allowed). Each wildcard is accepted on its own: cdk-nag 3 has no blanket IAM5 acknowledgement.
 */
export function acknowledgeWildcardResources(
  construct: IConstruct,
  resources: readonly string[],
  reason: string,
): void {
  for (const resource of resources) {
    acknowledge(construct, `AwsSolutions-IAM5[${wildcardFinding(construct, resource)}]`, reason);
  }
}

/**
 * Acknowledges the AwsSolutions-IAM5 finding of every wildcard action and resource in a role's own
 * policy, as it stands when called (an Aspect calls it once a construct library's grants are complete).
 */
export function acknowledgePolicyWildcards(role: IConstruct, reason: string): void {
  const policy = role.node.tryFindChild('DefaultPolicy') as { document?: { toJSON(): unknown } } | undefined;
  const document = Stack.of(role).resolve(policy?.document?.toJSON()) as
    | { Statement?: { Action?: string | string[]; Resource?: unknown }[] }
    | undefined;
  for (const statement of document?.Statement ?? []) {
    for (const action of [statement.Action ?? []].flat()) {
      if (action.includes('*')) acknowledge(role, `AwsSolutions-IAM5[Action::${action}]`, reason);
    }
    for (const resource of [statement.Resource ?? []].flat()) {
      const flat = flatten(resource);
      if (flat.includes('*')) acknowledge(role, `AwsSolutions-IAM5[Resource::${flat}]`, reason);
    }
  }
}

/**
 * The finding id cdk-nag reports for a wildcard resource: the resolved value flattened the way cdk-nag
 * does it (`{Ref: X}` → `<X>`, `{Fn::GetAtt: [A, B]}` → `<A.B>`), so it holds whether the stack's
 * region/account are concrete or tokens.
 */
export function wildcardFinding(scope: IConstruct, resource: string): string {
  return `Resource::${flatten(Stack.of(scope).resolve(resource))}`;
}

function flatten(node: unknown): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/\}/g, '>');
  const value = node as Record<string, unknown>;
  if (value['Fn::Join']) {
    const [delimiter, items] = value['Fn::Join'] as [string, unknown[]];
    return items.map(flatten).join(delimiter);
  }
  if (value['Fn::Sub']) return flatten(value['Fn::Sub']);
  if (value['Fn::GetAtt']) {
    const [resource, attribute] = value['Fn::GetAtt'] as [unknown, unknown];
    return `<${flatten(resource)}.${flatten(attribute)}>`;
  }
  if (value['Fn::ImportValue']) return flatten(value['Fn::ImportValue']);
  if (value.Ref) return `<${flatten(value.Ref)}>`;
  return JSON.stringify(node);
}
