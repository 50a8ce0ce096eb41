export function Portal(_: { ctx: unknown }) {
  return null;
}
