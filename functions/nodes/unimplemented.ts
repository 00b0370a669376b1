/** CODE, TOOL and USER_INTERACTION arrive in a later issue; until then they fail, naming the node. */
import { StepthreadError } from '../../engine/errors.ts';
import type { NodeBehaviour } from '../handlers/pipeline.ts';

export const unimplementedNode: NodeBehaviour = {
  logic(ctx) {
    const { node } = ctx;
    throw new StepthreadError(
      'NOT_IMPLEMENTED',
      `node ${node.id}: ${node.type} nodes cannot run yet in this version of stepthread`,
      { nodeId: node.id },
    );
  },
};
