import { changedLines } from './file-change.js';

describe('changed lines', () => {
  it('shows the lines between the common head and tail', () => {
    expect(changedLines('a\nb\nc\n', 'a\nB\nB2\nc\n')).toEqual(['- b', '+ B', '+ B2']);
    expect(changedLines('a\n', 'a\n')).toEqual([]);
  });

  it('cuts a long change short', () => {
    const lines = changedLines('x\n', `${'y\n'.repeat(20)}`, 4);
    expect(lines).toEqual(['- x', '+ y', '+ y', '+ y', '… 17 more lines']);
  });
});
