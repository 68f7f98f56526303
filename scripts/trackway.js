#!/usr/bin/env node
// The `trackway` command (package bin): runs the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
