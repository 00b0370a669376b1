/** Plain graph algorithms over adjacency maps; iterative so deep graphs cannot overflow the stack. */

export type Adjacency = (id: string) => readonly string[];

/** Nodes reachable from `starts` (included), never expanding past nodes in `stopAt` (which are not included). */
export function reachable(
  starts: readonly string[],
  next: Adjacency,
  stopAt: ReadonlySet<string> = new Set(),
): Set<string> {
  const seen = new Set<string>();
  const stack = starts.filter((id) => !stopAt.has(id));
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    for (const target of next(id)) if (!seen.has(target) && !stopAt.has(target)) stack.push(target);
  }
  return seen;
}

/**
 * Strongly connected components (Tarjan), each listed in `order` order, components in a deterministic
 * order (reverse topological, as Tarjan emits them).
 */
export function stronglyConnectedComponents(order: readonly string[], next: Adjacency): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const position = new Map(order.map((id, i) => [id, i]));
  let counter = 0;

  for (const root of order) {
    if (index.has(root)) continue;
    const work: Array<{ id: string; edge: number }> = [{ id: root, edge: 0 }];
    index.set(root, counter);
    low.set(root, counter);
    counter++;
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = next(frame.id).filter((id) => position.has(id));
      if (frame.edge < targets.length) {
        const target = targets[frame.edge++]!;
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter);
          counter++;
          stack.push(target);
          onStack.add(target);
          work.push({ id: target, edge: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.id, Math.min(low.get(frame.id)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.id, Math.min(low.get(parent.id)!, low.get(frame.id)!));
      if (low.get(frame.id) === index.get(frame.id)) {
        const component: string[] = [];
        let member: string | undefined;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.id);
        component.sort((a, b) => position.get(a)! - position.get(b)!);
        components.push(component);
      }
    }
  }
  return components;
}
