/**
 * State names. Step Functions requires them unique across the whole machine (Parallel branches
 * included) and at most 80 characters. Validation refuses ids whose names would pass 80 characters
 * (engine/validation/id-rules.ts); a name already taken (a node named like a helper) gets a
 * deterministic hash suffix, and so would a too-long one compiled without validation.
 */

export const MAX_STATE_NAME_LENGTH = 80;
const HASH_SUFFIX_LENGTH = 9; // '~' + 8 hex digits

export interface StateNames {
  /** The state name for `desired`: itself when free and short enough, else a unique variant. */
  claim(desired: string): string;
}

export function createStateNames(): StateNames {
  const taken = new Set<string>();
  return {
    claim(desired) {
      let name = fits(desired) && !taken.has(desired) ? desired : shortened(desired, hash(desired));
      for (let n = 2; taken.has(name); n++) name = shortened(desired, `${hash(desired)}-${n}`);
      taken.add(name);
      return name;
    },
  };
}

/** Counted in code points, as Step Functions counts Unicode characters. */
function fits(name: string): boolean {
  return name.length > 0 && Array.from(name).length <= MAX_STATE_NAME_LENGTH;
}

function shortened(desired: string, tag: string): string {
  const keep = MAX_STATE_NAME_LENGTH - HASH_SUFFIX_LENGTH - (tag.length - 8);
  return `${Array.from(desired).slice(0, keep).join('')}~${tag}`;
}

/** FNV-1a (32 bit) as 8 hex digits: stable across runs and platforms. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
