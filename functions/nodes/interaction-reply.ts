/**
 * Replies to a USER_INTERACTION: the engine's pure parsing (validate checks a config `userInput`
 * with it too), under the name the CLI and the nodes import it by.
 */
export {
  type AnswerVariable,
  answerVariableOf,
  answerVariableProblem,
  type InteractionReply,
  replyFromValue,
  selectionIndex,
  selectionProblem,
} from '../../engine/model/interaction-reply.ts';
