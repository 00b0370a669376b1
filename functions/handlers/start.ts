/**
 * Lambda handler for START tasks, and `stepthread:resume` (continue-as-new): only START's code is
 * imported, so its bundle carries nothing else.
 */
import { runResume } from '../nodes/resume.ts';
import { runStart } from '../nodes/start.ts';
import { createNodeHandler } from './lambda.ts';

export const handler = createNodeHandler('START', { execute: runStart, resume: runResume });
