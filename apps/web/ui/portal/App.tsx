import { AppFrame, readPageContext } from '@clinic/ui';
import { Portal } from './Portal.tsx';

const ctx = readPageContext();

export function App() {
  return (
    <AppFrame ctx={ctx} current="portal" titleKey="portal.title">
      {() => <Portal ctx={ctx} />}
    </AppFrame>
  );
}
