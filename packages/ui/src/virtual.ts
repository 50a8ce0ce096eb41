import { type RefObject, useCallback, useEffect, useState } from 'react';

/**
 * Windowing for long lists of rows of one height: which rows of `count` are in (or near) the scrolling
 * element's view, so a list of 100,000 renders a few dozen elements. The element's own scroll position is
 * the state (no scroll-jacking); `scrollToIndex` brings a row into view for keyboard movement.
 */
export function useVirtualWindow({
  scrollRef,
  count,
  rowHeight,
  overscan = 8,
  headerHeight = 0,
}: {
  scrollRef: RefObject<HTMLElement | null>;
  count: number;
  rowHeight: number;
  overscan?: number;
  /** Space above the first row inside the scrolling element (a sticky header row). */
  headerHeight?: number;
}): { start: number; end: number; totalHeight: number; scrollToIndex: (index: number) => void } {
  const [view, setView] = useState({ top: 0, height: 600 });
  useEffect(() => {
    const el = scrollRef.current;
    if (!el) return;
    const read = () => setView({ top: el.scrollTop, height: el.clientHeight });
    read();
    el.addEventListener('scroll', read, { passive: true });
    const ro = typeof ResizeObserver === 'function' ? new ResizeObserver(read) : null;
    ro?.observe(el);
    return () => {
      el.removeEventListener('scroll', read);
      ro?.disconnect();
    };
  }, [scrollRef]);
  const first = Math.floor(Math.max(0, view.top - headerHeight) / rowHeight);
  const visible = Math.ceil(view.height / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, first + visible + overscan);
  const scrollToIndex = useCallback(
    (index: number) => {
      const el = scrollRef.current;
      if (!el) return;
      const top = headerHeight + index * rowHeight;
      if (top - headerHeight < el.scrollTop) el.scrollTop = top - headerHeight;
      else if (top + rowHeight > el.scrollTop + el.clientHeight) el.scrollTop = top + rowHeight - el.clientHeight;
    },
    [scrollRef, rowHeight, headerHeight],
  );
  return { start, end, totalHeight: count * rowHeight, scrollToIndex };
}
