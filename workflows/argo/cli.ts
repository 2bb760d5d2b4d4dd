/** `forge render`, `forge submit`, `forge watch` (being built; see docs/argo.md). */
const notYet = (name: string) => async (_argv: string[]): Promise<number> => {
  console.error(`forge ${name}: not built yet`);
  return 1;
};
export const renderCommand = notYet("render");
export const submitCommand = notYet("submit");
export const watchCommand = notYet("watch");
