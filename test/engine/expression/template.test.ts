import { describe, expect, it } from 'vitest';
import {
  isWholeTemplate,
  renderString,
  renderTemplate,
  validateTemplate,
} from '../../../engine/expression/index.ts';
import { expectCoded } from './helpers.ts';

const scope = {
  name: 'Ada',
  count: 3,
  items: ['a', 'b'],
  user: { id: 7, profile: { lang: 'en' } },
  nothing: null,
  flag: false,
};

describe('renderTemplate', () => {
  it('returns the raw value for a string that is exactly one template', () => {
    expect(renderTemplate('{{items}}', scope)).toEqual(['a', 'b']);
    expect(renderTemplate('{{ user }}', scope)).toEqual(scope.user);
    expect(renderTemplate('{{count}}', scope)).toBe(3);
    expect(renderTemplate('{{ flag }}', scope)).toBe(false);
    expect(renderTemplate('{{ missing }}', scope)).toBeUndefined();
    expect(renderTemplate('{{ count * 2 }}', scope)).toBe(6);
  });

  it('interpolates when there is surrounding text or several templates', () => {
    expect(renderTemplate('Hi {{name}}!', scope)).toBe('Hi Ada!');
    expect(renderTemplate(' {{count}}', scope)).toBe(' 3');
    expect(renderTemplate('{{name}}{{count}}', scope)).toBe('Ada3');
    expect(renderTemplate('items: {{items}}', scope)).toBe('items: ["a","b"]');
    expect(renderTemplate('user: {{ user.profile }}', scope)).toBe('user: {"lang":"en"}');
    expect(renderTemplate('{{ flag }}/{{ count > 1 }}', scope)).toBe('false/true');
  });

  it('renders missing paths and null as empty text', () => {
    expect(renderTemplate('[{{ missing.path }}]', scope)).toBe('[]');
    expect(renderTemplate('[{{ nothing }}]', scope)).toBe('[]');
  });

  it('walks arrays and nested objects, leaving keys and non-strings alone', () => {
    const input = {
      greeting: 'Hello {{ name }}',
      ids: ['{{ user.id }}', 'x{{ user.id }}', 5, true, null],
      nested: { lang: '{{ user.profile.lang }}', list: '{{ items }}', '{{name}}': 'k' },
    };
    expect(renderTemplate(input, scope)).toEqual({
      greeting: 'Hello Ada',
      ids: [7, 'x7', 5, true, null],
      nested: { lang: 'en', list: ['a', 'b'], '{{name}}': 'k' },
    });
    expect(input.greeting).toBe('Hello {{ name }}');
  });

  it('passes through strings without templates and non-plain objects unchanged', () => {
    const date = new Date(0);
    expect(renderTemplate(date, scope)).toBe(date);
    expect(renderTemplate('plain } { text', scope)).toBe('plain } { text');
    expect(renderTemplate(42, scope)).toBe(42);
  });

  it('accepts full expressions, including strings containing }}', () => {
    expect(renderTemplate('{{ count > 2 ? "many" : "few" }} items', scope)).toBe('many items');
    expect(renderTemplate('{{ "}}" }}', scope)).toBe('}}');
    expect(renderTemplate("a{{ '{{' }}b", scope)).toBe('a{{b');
    expect(renderTemplate('{{ upper(name) + "-" + len(items) }}', scope)).toBe('ADA-2');
  });

  it('keeps a "__proto__" key as an own key instead of setting the prototype', () => {
    const input = JSON.parse('{"__proto__": {"polluted": "{{name}}"}}') as Record<string, unknown>;
    const out = renderTemplate(input, scope) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('stops on cyclic or too deep structures', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expectCoded(() => renderTemplate(cyclic, scope), 'EXPRESSION_ERROR');
  });

  it('reports malformed templates and failed evaluations with codes', () => {
    expect(expectCoded(() => renderTemplate('Hi {{ name', scope), 'INVALID_EXPRESSION').message).toMatch(
      /no closing/,
    );
    expect(expectCoded(() => renderTemplate('x {{ }} y', scope), 'INVALID_EXPRESSION').message).toMatch(
      /empty.*in the template at character 4/,
    );
    expectCoded(() => renderTemplate('{{ name - 1 }}', scope), 'EXPRESSION_ERROR');
  });
});

describe('renderString', () => {
  it('always returns text, even for a lone template', () => {
    expect(renderString('{{ items }}', scope)).toBe('["a","b"]');
    expect(renderString('{{ count }}', scope)).toBe('3');
    expect(renderString('{{ missing }}', scope)).toBe('');
    expect(renderString('Dear {{ name }}, you have {{ count }} items.', scope)).toBe(
      'Dear Ada, you have 3 items.',
    );
    expect(renderString('no templates', scope)).toBe('no templates');
  });

  it('caps the rendered size', () => {
    const big = 'x'.repeat(600_000);
    expect(renderString('{{ big }}', { big })).toHaveLength(600_000);
    expect(
      expectCoded(() => renderString('{{ big }}{{ big }}', { big }), 'EXPRESSION_ERROR').message,
    ).toMatch(/limit/);
  });
});

describe('validateTemplate', () => {
  it('finds nothing in valid or template-free values', () => {
    expect(validateTemplate({ a: 'Hi {{ name }}', b: ['{{ x + 1 }}', 3], c: 'plain' })).toEqual([]);
  });

  it('reports each bad template with its path', () => {
    const problems = validateTemplate(
      { prompt: 'Hi {{ name', args: { list: ['ok', '{{ a.b() }}'], 'odd key': '{{ this }}' } },
      'nodes[2].config',
    );
    expect(problems).toHaveLength(3);
    expect(problems.map((p) => p.path)).toEqual([
      'nodes[2].config.prompt',
      'nodes[2].config.args.list[1]',
      'nodes[2].config.args["odd key"]',
    ]);
    expect(problems.every((p) => p.code === 'INVALID_EXPRESSION')).toBe(true);
    expect(problems[1]?.message).toMatch(/method calls/);
  });

  it('checks a bare string without a path', () => {
    expect(validateTemplate('{{ nope(1) }}')).toEqual([
      { code: 'INVALID_EXPRESSION', message: expect.stringMatching(/unknown function "nope"/) },
    ]);
  });
});

describe('isWholeTemplate', () => {
  it.each([
    ['{{ items }}', true],
    ['  {{a + 1}}\n', true],
    ['{{ "}}" }}', true],
    ['{{a}} + {{b}}', false],
    ['x {{a}}', false],
    ['{{a}}!', false],
    ['{{ a', false],
    ['plain', false],
  ])('%j → %s', (text, expected) => {
    expect(isWholeTemplate(text)).toBe(expected);
  });
});
