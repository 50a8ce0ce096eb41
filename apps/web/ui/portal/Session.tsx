import type { ResponseOf } from '@clinic/client';
import { api, Notice, Spinner, useI18n } from '@clinic/ui';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';

type Started = ResponseOf<'startPlanSession'>['data'];

/** Today's treatment session: the plan items of the day; starting one plays its composed video. */
export default function Session({ headers }: { headers: Record<string, string> | undefined }) {
  const { t } = useI18n();
  const h = headers ? { headers } : {};
  const today = useQuery({ queryKey: ['today', headers], queryFn: async () => (await api.getTodayPlan({ ...h })).data.data });
  const [playing, setPlaying] = useState<{ started: Started; exerciseId: string } | null>(null);
  const start = useMutation({
    mutationFn: async (v: { enrollment: string; item: number; exerciseId: string }) => ({
      started: (await api.startPlanSession({ params: { id: v.enrollment }, body: { item_index: v.item }, ...h })).data.data,
      exerciseId: v.exerciseId,
    }),
    onSuccess: setPlaying,
  });
  if (today.isPending) return <Spinner />;
  if (today.isError) return <Notice kind="error">{t('app.error')}</Notice>;
  const days = today.data.enrollments.filter((e) => e.plan_day !== null);
  if (!days.length) return <p className="muted">{t('session.none')}</p>;
  const url = (playing?.started as { video?: { playback_hls_url?: string } | null } | undefined)?.video?.playback_hls_url;
  return (
    <div className="stack">
      {playing && url && <Player src={url} exerciseId={playing.exerciseId} />}
      {days.map((e) => (
        <section key={e.enrollment.id} aria-label={e.title ?? t('portal.session')}>
          <h2>{e.title ?? t('portal.session')}</h2>
          {e.phase && <p className="muted">{e.phase}</p>}
          <h3>{t('session.exercises')}</h3>
          <ul className="list">
            {e.items.map((it) => (
              <li key={it.item_index} className="list-item">
                <strong>{it.exercise?.name ?? ''}</strong>
                <button
                  type="button"
                  className="button button-secondary"
                  disabled={start.isPending || it.status === 'completed' || it.status === 'skipped'}
                  onClick={() => start.mutate({ enrollment: e.enrollment.id, item: it.item_index, exerciseId: it.item.exercise_id })}
                >
                  {t('session.play')}
                </button>
              </li>
            ))}
          </ul>
        </section>
      ))}
      {start.isError && <Notice kind="error">{t('app.error')}</Notice>}
    </div>
  );
}

type MediaEvent = { kind: string; [k: string]: unknown };

/**
 * The composed video through hls.js (loaded only here), reporting the spec's media events to the telemetry
 * service: session_start, a heartbeat every 10 s, milestones at 25/50/75/95 %, session_end.
 */
function Player({ src, exerciseId }: { src: string; exerciseId: string }) {
  const video = useRef<HTMLVideoElement>(null);
  useEffect(() => {
    const el = video.current;
    if (!el) return;
    const mediaSession = crypto.randomUUID();
    let seq = 0;
    const loadStart = performance.now();
    const queue: (MediaEvent & { seq: number; at: string })[] = [];
    const send = () => {
      if (!queue.length) return;
      const events = queue.splice(0, 100);
      void fetch('/telemetry/v1/media/events', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ media_session_id: mediaSession, exercise_id: exerciseId, events }),
        keepalive: true,
      }).catch(() => undefined);
    };
    const emit = (e: MediaEvent) => queue.push({ ...e, seq: seq++, at: new Date().toISOString() });
    const reached = new Set<number>();
    let bufferingSince: number | null = null;
    let totalBuffering = 0;
    let ended = false;
    const onMeta = () => {
      const c = (navigator as { connection?: { effectiveType?: string; downlink?: number; rtt?: number } }).connection;
      emit({
        kind: 'session_start',
        load_time_ms: Math.round(performance.now() - loadStart),
        connection: {
          effective_type: c?.effectiveType ?? 'unknown',
          ...(c?.downlink ? { downlink_mbps: c.downlink } : {}),
          ...(c?.rtt ? { rtt_ms: c.rtt } : {}),
        },
      });
      send();
    };
    const onTime = () => {
      if (!el.duration) return;
      const pct = (el.currentTime / el.duration) * 100;
      for (const m of [25, 50, 75, 95]) if (pct >= m && !reached.has(m)) reached.add(m) && emit({ kind: 'milestone', percent: m });
    };
    const onWaiting = () => {
      bufferingSince = performance.now();
      emit({ kind: 'buffering_start', position_s: el.currentTime });
    };
    const onPlaying = () => {
      if (bufferingSince === null) return;
      const d = Math.round(performance.now() - bufferingSince);
      totalBuffering += d;
      bufferingSince = null;
      emit({ kind: 'buffering_end', position_s: el.currentTime, duration_ms: d });
    };
    const end = (status: 'completed' | 'abandoned' | 'error') => {
      if (ended) return;
      ended = true;
      const quality = el.getVideoPlaybackQuality?.();
      emit({
        kind: 'session_end',
        position_s: el.currentTime,
        watched_percent: el.duration ? Math.min(100, Math.round((el.currentTime / el.duration) * 100)) : 0,
        completion_status: status,
        total_buffering_ms: totalBuffering,
        dropped_frames: quality?.droppedVideoFrames ?? 0,
        avg_bitrate_kbps: 0,
      });
      send();
    };
    let lastDropped = 0;
    const beat = setInterval(() => {
      const dropped = el.getVideoPlaybackQuality?.().droppedVideoFrames ?? 0;
      emit({
        kind: 'heartbeat',
        position_s: el.currentTime,
        buffering: bufferingSince !== null,
        bitrate_kbps: 0,
        quality: `${el.videoHeight}p`,
        dropped_frames: dropped - lastDropped,
      });
      lastDropped = dropped;
      send();
    }, 10_000);
    const onEnded = () => end('completed');
    const onError = () => end('error');
    el.addEventListener('loadedmetadata', onMeta);
    el.addEventListener('timeupdate', onTime);
    el.addEventListener('waiting', onWaiting);
    el.addEventListener('playing', onPlaying);
    el.addEventListener('ended', onEnded);
    el.addEventListener('error', onError);
    let destroy = () => {};
    if (el.canPlayType('application/vnd.apple.mpegurl')) el.src = src;
    else
      void import('hls.js').then(({ default: Hls }) => {
        if (ended) return;
        const hls = new Hls();
        hls.loadSource(src);
        hls.attachMedia(el);
        destroy = () => hls.destroy();
      });
    return () => {
      end('abandoned');
      clearInterval(beat);
      destroy();
      el.removeEventListener('loadedmetadata', onMeta);
      el.removeEventListener('timeupdate', onTime);
      el.removeEventListener('waiting', onWaiting);
      el.removeEventListener('playing', onPlaying);
      el.removeEventListener('ended', onEnded);
      el.removeEventListener('error', onError);
    };
  }, [src, exerciseId]);
  // biome-ignore lint/a11y/useMediaCaption: the composed exercise videos have no speech (docs/composer.md).
  return <video ref={video} className="session-video" controls playsInline />;
}
