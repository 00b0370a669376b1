import {
  type ConversationView,
  createConversation,
  type Message,
  openConversation,
} from '../../../engine/conversation/index.ts';

export const user = (content: string): Message => ({ role: 'user', content });
export const assistant = (content: string): Message => ({ role: 'assistant', content });
export const system = (content: string): Message => ({ role: 'system', content });

/** n messages m0..m(n-1), alternating user/assistant. */
export function numbered(n: number, from = 0): Message[] {
  return Array.from({ length: n }, (_, i) => (i % 2 === 0 ? user : assistant)(`m${from + i}`));
}

/** A fresh view over an empty conversation with `messages` appended. */
export function viewWith(messages: readonly Message[]): ConversationView {
  const view = openConversation(createConversation({ threadId: 't1', logId: 'log-1' }), []);
  view.append(...messages);
  return view;
}

export const contents = (view: ConversationView): string[] => view.visibleMessages().map((m) => m.content);
