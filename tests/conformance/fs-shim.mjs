import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export { globSync } from 'glob';
