/**
 * Conversions between stepthread messages/tools and the two wire formats: OpenAI chat completions
 * and the Bedrock Converse API. Pure functions, no I/O.
 *
 * A conversation edited by context operations (truncate, filter, ...) can cut a tool call off from
 * its result; both APIs reject that with a 400. `pairToolMessages` repairs it first, so an edited
 * conversation stays sendable.
 */
import type {
  ContentBlock,
  Message as ConverseMessage,
  Tool as ConverseTool,
  InferenceConfiguration,
  SystemContentBlock,
  ToolConfiguration,
} from '@aws-sdk/client-bedrock-runtime';
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionFunctionTool,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { Message, ToolCall } from '../../engine/model/schema.ts';
import type { ToolSpec, ToolSpecs } from './provider.ts';

const EMPTY_OBJECT_SCHEMA = { type: 'object', properties: {} } as const;

/** The argument schema sent for a tool: its own, or "an object with no properties". */
export function argumentsSchema(spec: ToolSpec): Record<string, unknown> {
  return spec.parameters ? { ...spec.parameters } : { ...EMPTY_OBJECT_SCHEMA };
}

/**
 * Tool arguments as the model sent them: parsed JSON, or the raw text when it is not valid JSON
 * (the tool loop tells the model so instead of failing).
 */
export function parseToolArguments(raw: string): unknown {
  if (raw.trim() === '') return {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** Arguments back as JSON text: raw text that never parsed goes back exactly as the model sent it. */
export function toolArgumentsText(args: unknown): string {
  return typeof args === 'string' ? args : (JSON.stringify(args ?? {}) ?? '{}');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Every assistant tool call followed by its result, every tool result answering a call: calls
 * without a result are dropped from their message, results without a call become user text (their
 * content is kept where the model can still read it).
 */
export function pairToolMessages(messages: readonly Message[]): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      out.push(orphanResult(message));
      continue;
    }
    if (message.role !== 'assistant' || !message.toolCalls?.length) {
      out.push(message);
      continue;
    }
    const results: Message[] = [];
    while (messages[i + 1]?.role === 'tool') results.push(messages[++i]!);
    const callIds = new Set(message.toolCalls.map((call) => call.id));
    const answered = new Set<string>();
    const paired: Message[] = [];
    const orphans: Message[] = [];
    for (const result of results) {
      const id = result.toolCallId;
      if (id !== undefined && callIds.has(id) && !answered.has(id)) {
        answered.add(id);
        paired.push(result);
      } else {
        orphans.push(orphanResult(result));
      }
    }
    const { toolCalls, ...rest } = message;
    const kept = toolCalls.filter((call) => answered.has(call.id));
    out.push(kept.length > 0 ? { ...rest, toolCalls: kept } : rest, ...paired, ...orphans);
  }
  return out;
}

function orphanResult(message: Message): Message {
  const label = message.name ? `tool ${message.name}` : 'a tool';
  return { role: 'user', content: `Result of ${label}: ${message.content}` };
}

// ---- OpenAI chat completions ----

const OPENAI_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function nameField(message: Message): { name?: string } {
  return message.name !== undefined && OPENAI_NAME.test(message.name) ? { name: message.name } : {};
}

export function toOpenAiMessages(messages: readonly Message[]): ChatCompletionMessageParam[] {
  return pairToolMessages(messages).map(toOpenAiMessage);
}

function toOpenAiMessage(message: Message): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content, ...nameField(message) };
    case 'user':
      return { role: 'user', content: message.content, ...nameField(message) };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId!, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      const param: ChatCompletionAssistantMessageParam = {
        role: 'assistant',
        // With tool calls an empty content is sent as null, as the API itself returns it.
        content: calls.length > 0 && message.content === '' ? null : message.content,
        ...nameField(message),
      };
      if (calls.length > 0) {
        param.tool_calls = calls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: call.name, arguments: toolArgumentsText(call.arguments) },
        }));
      }
      return param;
    }
  }
}

export function toOpenAiTools(tools: ToolSpecs): ChatCompletionFunctionTool[] {
  return Object.entries(tools).map(([name, spec]) => ({
    type: 'function',
    function: { name, description: spec.description, parameters: argumentsSchema(spec) },
  }));
}

/** The assistant message of a chat-completions choice. */
export function fromOpenAiMessage(message: Pick<ChatCompletionMessage, 'content' | 'tool_calls'>): Message {
  const toolCalls: ToolCall[] = [];
  for (const call of message.tool_calls ?? []) {
    // Custom (free-text) tools are never offered, so only function calls can come back.
    if (call.type !== 'function') continue;
    toolCalls.push({
      id: call.id,
      name: call.function.name,
      arguments: parseToolArguments(call.function.arguments),
    });
  }
  return {
    role: 'assistant',
    content: message.content ?? '',
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
  };
}

// ---- Bedrock Converse ----

export interface ConverseConversation {
  system: SystemContentBlock[];
  messages: ConverseMessage[];
}

/**
 * Converse wants system text apart, strictly alternating user/assistant turns, tool results as
 * user content, and no empty text blocks. System messages anywhere in the conversation go to
 * `system` in order; neighbouring turns of the same role are merged.
 *
 * Converse also rejects toolUse/toolResult blocks in a request without `toolConfig`; a request
 * that offers no tools (`withToolBlocks: false`) gets earlier tool traffic as plain text instead.
 */
export function toConverseConversation(
  messages: readonly Message[],
  { withToolBlocks = true }: { withToolBlocks?: boolean } = {},
): ConverseConversation {
  const system: SystemContentBlock[] = [];
  const turns: ConverseMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = turns[turns.length - 1];
    if (last?.role === role) last.content = [...(last.content ?? []), ...blocks];
    else turns.push({ role, content: blocks });
  };
  for (const message of pairToolMessages(messages)) {
    switch (message.role) {
      case 'system':
        if (hasText(message.content)) system.push({ text: message.content });
        break;
      case 'user':
        push('user', textBlocks(message.content));
        break;
      case 'tool':
        if (!withToolBlocks) {
          push('user', textBlocks(orphanResult(message).content));
          break;
        }
        push('user', [
          {
            toolResult: {
              toolUseId: message.toolCallId!,
              content: [{ text: hasText(message.content) ? message.content : '(no output)' }],
            },
          },
        ]);
        break;
      case 'assistant':
        if (!withToolBlocks) {
          const calls = (message.toolCalls ?? []).map(
            (call) => `[called tool ${call.name} with ${toolArgumentsText(call.arguments)}]`,
          );
          push('assistant', textBlocks([message.content, ...calls].filter(hasText).join('\n')));
          break;
        }
        push('assistant', [
          ...textBlocks(message.content),
          ...(message.toolCalls ?? []).map(
            (call): ContentBlock => ({
              toolUse: {
                toolUseId: call.id,
                name: call.name,
                // Converse requires an object; arguments that never parsed have nothing to send.
                input: (isPlainObject(call.arguments) ? call.arguments : {}) as never,
              },
            }),
          ),
        ]);
        break;
    }
  }
  return { system, messages: turns };
}

function hasText(text: string): boolean {
  return text.trim() !== '';
}

function textBlocks(text: string): ContentBlock[] {
  return hasText(text) ? [{ text }] : [];
}

export function toConverseToolConfig(tools: ToolSpecs): ToolConfiguration {
  return {
    tools: Object.entries(tools).map(
      ([name, spec]): ConverseTool => ({
        toolSpec: {
          name,
          description: spec.description,
          inputSchema: { json: argumentsSchema(spec) as never },
        },
      }),
    ),
  };
}

/** The assistant message of a Converse output. */
export function fromConverseMessage(message: ConverseMessage | undefined): Message {
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of message?.content ?? []) {
    if (block.text !== undefined) texts.push(block.text);
    else if (block.toolUse !== undefined) {
      toolCalls.push({
        id: block.toolUse.toolUseId ?? '',
        name: block.toolUse.name ?? '',
        arguments: block.toolUse.input ?? {},
      });
    }
  }
  return { role: 'assistant', content: texts.join(''), ...(toolCalls.length > 0 ? { toolCalls } : {}) };
}

export interface ConverseParameters {
  inferenceConfig?: InferenceConfiguration;
  additionalModelRequestFields?: Record<string, unknown>;
}

/**
 * Profile/node parameters for Converse: the common ones (also under their OpenAI names) go to
 * `inferenceConfig`; everything else (e.g. `top_k`) is passed to the model as additional fields.
 */
export function toConverseParameters(parameters: Readonly<Record<string, unknown>>): ConverseParameters {
  const inference: InferenceConfiguration = {};
  const additional: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parameters)) {
    if ((key === 'maxTokens' || key === 'max_tokens') && typeof value === 'number')
      inference.maxTokens = value;
    else if (key === 'temperature' && typeof value === 'number') inference.temperature = value;
    else if ((key === 'topP' || key === 'top_p') && typeof value === 'number') inference.topP = value;
    else if (key === 'stopSequences' || key === 'stop') {
      inference.stopSequences = (Array.isArray(value) ? value : [value]).map(String);
    } else additional[key] = value;
  }
  return {
    ...(Object.keys(inference).length > 0 ? { inferenceConfig: inference } : {}),
    ...(Object.keys(additional).length > 0 ? { additionalModelRequestFields: additional } : {}),
  };
}
