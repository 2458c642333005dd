import * as fs from 'fs';
import * as path from 'path';

/** The repository this package lives in (infra/cdk), found from the running file up. */
export const REPO_ROOT = path.resolve(packageRoot(__dirname), '..', '..');

function packageRoot(from: string): string {
  let dir = from;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) {
      throw new Error(`McpAsyncJobs: no package.json above ${from}`);
    }
    dir = parent;
  }
  return dir;
}

/**
 * Where `make build` (cargo lambda build) leaves the functions: `<CARGO_TARGET_DIR>/lambda`, a
 * relative CARGO_TARGET_DIR taken from the repository's root as the Makefile and cargo take it
 * there, else `<repository>/target/lambda`.
 */
export function builtFunctionsDir(cargoTargetDir: string | undefined = process.env.CARGO_TARGET_DIR): string {
  return path.resolve(REPO_ROOT, cargoTargetDir || 'target', 'lambda');
}
