/**
 * Public entry of the pure engine (`stepthread/engine`): the workflow model, validation and the ASL
 * compiler. No AWS SDK and no I/O.
 */
export * from './asl/index.ts';
export { type CodedError, ERROR_CODES, type ErrorCode, StepthreadError } from './errors.ts';
export type * from './model/schema.ts';
export { NODE_TYPES } from './model/schema.ts';
export type { Envelope } from './thread/types.ts';
export { type ValidationResult, validateWorkflow } from './validation/validate.ts';
