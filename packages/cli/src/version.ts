/** The version of @sbx/cli (kept equal to package.json by a test). */
export const CLI_VERSION = '0.1.0';
