import fs from 'node:fs';
import { register } from 'node:module';
if (typeof fs.globSync !== 'function') register('./fs-hooks.mjs', import.meta.url);
