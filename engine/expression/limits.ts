/**
 * Hard limits of the expression language. They bound the work and memory one evaluation can
 * cost, so a hostile or careless workflow file cannot stall or exhaust a Lambda.
 */

/** Longest accepted expression source, in characters (matches the workflow schema's bound). */
export const MAX_EXPRESSION_LENGTH = 4096;
/** Deepest accepted syntax tree (and bracket nesting, checked before parsing). */
export const MAX_AST_DEPTH = 64;
/** Longest string the evaluator will build (UTF-16 code units, about 1 MB). */
export const MAX_STRING_LENGTH = 1_048_576;
/** Most elements an array literal or `split` may produce. */
export const MAX_ARRAY_LENGTH = 100_000;
/** Deepest object/array structure `renderTemplate` walks (also stops on cycles). */
export const MAX_TEMPLATE_DEPTH = 64;
/**
 * Work one evaluation, or one template render with all its `{{ }}`, may do (budget.ts): syntax nodes
 * evaluated plus characters read and built, and 8 per element or key. Under a second of work.
 */
export const MAX_EVALUATION_WORK = 10_000_000;
/**
 * Work all the evaluations of one node step may do together (budget.ts): about 1.2 s on one core
 * (bench/expressions.ts), so well inside the 30 s of a ROUTE or VARIABLE Lambda even at the fraction
 * of a core its 256 MB buys.
 */
export const MAX_NODE_WORK = 30_000_000;
/** Parsed expressions kept in the LRU cache. */
export const PARSE_CACHE_SIZE = 512;
