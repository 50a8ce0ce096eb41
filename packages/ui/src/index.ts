export * from './api.ts';
export * from './components.tsx';
export * from './context.ts';
export * from './fields.tsx';
export * from './format.ts';
export * from './i18n/index.ts';
export * from './i18n/react.tsx';
export * from './app-frame.tsx';
