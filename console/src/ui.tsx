/** Small pieces the pages share. */

export function navigate(...parts: string[]): void {
  window.location.hash = `#/${parts.map((part) => encodeURIComponent(part)).join('/')}`;
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status-${status.toLowerCase()}`}>{status.toLowerCase()}</span>;
}
