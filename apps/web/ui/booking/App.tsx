import { AppFrame, Notice, readPageContext, translate } from '@clinic/ui';
import { Booker } from './Booker.tsx';

const ctx = readPageContext();

export function App() {
  return (
    <AppFrame ctx={ctx} current="book" titleKey="book.title">
      {(lang) =>
        ctx.organization ? (
          <Booker org={ctx.organization} email={ctx.user?.email ?? null} />
        ) : (
          <Notice kind="error">{translate(lang, 'app.noClinic')}</Notice>
        )
      }
    </AppFrame>
  );
}
