/**
 * Streamed replies on a deployed stack: an AppSync Events API with one channel namespace, which the
 * LLM function publishes the replies it streams to (one channel per execution,
 * functions/events/reply-channel.ts) and operators subscribe to (`stepthread watch`,
 * `stepthread dev --target aws`).
 *
 * IAM only, no API key: the LLM function's role may publish on the namespace and nothing else; the
 * operator policy (the people or CI roles that run the CLI, whose own IAM credentials sign the
 * WebSocket connection and subscription) may connect and subscribe, never publish.
 */
import { CfnOutput, Stack } from 'aws-cdk-lib';
import {
  AppSyncAuthorizationType,
  AppSyncEventResource,
  type ChannelNamespace,
  EventApi,
} from 'aws-cdk-lib/aws-appsync';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { EVENTS_HTTP_ENV, EVENTS_NAMESPACE_ENV, REPLY_NAMESPACE } from '../functions/events/reply-channel.ts';
import type { StepthreadRuntime } from './runtime.ts';

/** The outputs the CLI reads to subscribe (cli/deployed/reply-stream.ts). */
export const STREAMING_OUTPUT_NAMES = [
  'EventsHttpDomain',
  'EventsRealtimeDomain',
  'EventsNamespace',
] as const;

export interface StepthreadStreamingProps {
  /** The runtime whose LLM function publishes (it must have one). */
  readonly runtime: StepthreadRuntime;
  /** Add the outputs `stepthread watch --stack` reads to the stack (default true). */
  readonly stackOutputs?: boolean;
}

export class StepthreadStreaming extends Construct {
  readonly api: EventApi;
  readonly namespace: ChannelNamespace;
  readonly namespaceName = REPLY_NAMESPACE;

  constructor(scope: Construct, id: string, props: StepthreadStreamingProps) {
    super(scope, id);
    const { runtime } = props;
    const iam = AppSyncAuthorizationType.IAM;
    this.api = new EventApi(this, 'Api', {
      apiName: `${runtime.namePrefix}-replies`,
      authorizationConfig: {
        authProviders: [{ authorizationType: iam }],
        connectionAuthModeTypes: [iam],
        defaultPublishAuthModeTypes: [iam],
        defaultSubscribeAuthModeTypes: [iam],
      },
    });
    this.namespace = this.api.addChannelNamespace('Replies', { channelNamespaceName: this.namespaceName });
    this.namespace.node.addDependency(this.api);
    const [namespaceArn] = AppSyncEventResource.ofChannelNamespace(this.namespaceName).resourceArns(this.api);
    const [apiArn] = AppSyncEventResource.forAPI().resourceArns(this.api);

    // The LLM function publishes over HTTP (no connection): EventPublish on this namespace only.
    const llm = runtime.functionFor('LLM');
    llm.addToRolePolicy(
      new PolicyStatement({
        sid: 'PublishReplies',
        actions: ['appsync:EventPublish'],
        resources: [namespaceArn!],
      }),
    );
    llm.addEnvironment(EVENTS_HTTP_ENV, this.api.httpDns);
    llm.addEnvironment(EVENTS_NAMESPACE_ENV, this.namespaceName);

    // Operators watch: connect to the API and subscribe to the namespace; they never publish.
    runtime.operatorPolicy.addStatements(
      new PolicyStatement({
        sid: 'WatchRepliesConnect',
        actions: ['appsync:EventConnect'],
        resources: [apiArn!],
      }),
      new PolicyStatement({
        sid: 'WatchRepliesSubscribe',
        actions: ['appsync:EventSubscribe'],
        resources: [namespaceArn!],
      }),
    );

    if (props.stackOutputs ?? true) {
      const stack = Stack.of(this);
      new CfnOutput(stack, 'EventsHttpDomain', {
        value: this.api.httpDns,
        description: 'AppSync Events HTTP domain the LLM function publishes streamed replies to',
      });
      new CfnOutput(stack, 'EventsRealtimeDomain', {
        value: this.api.realtimeDns,
        description: 'AppSync Events realtime domain `stepthread watch` subscribes on',
      });
      new CfnOutput(stack, 'EventsNamespace', { value: this.namespaceName });
    }
  }
}
