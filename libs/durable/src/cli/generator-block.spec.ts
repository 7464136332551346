import { findGenerators, PARTIAL_INDEXES, topLevelBlocks, withPreviewFeature } from './generator-block.js';

const enable = (text: string) => findGenerators(text).reduceRight((t, g) => withPreviewFeature(t, g, PARTIAL_INDEXES), text);

describe('generator blocks', () => {
  it('finds generators with provider and preview features, skipping comments and braces inside strings', () => {
    const text = `// generator old { provider = "x" }
generator client {
  provider        = "prisma-client" // the new one
  output          = "../src/{weird}/generated"
  previewFeatures = ["relationJoins", "views"]
}

/// A model
model User {
  id Int @id
}

generator dbml {
  provider = "prisma-dbml-generator"
}
`;
    expect(findGenerators(text)).toEqual([
      expect.objectContaining({ name: 'client', provider: 'prisma-client', previewFeatures: ['relationJoins', 'views'] }),
      expect.objectContaining({ name: 'dbml', provider: 'prisma-dbml-generator', previewFeatures: null }),
    ]);
    expect(topLevelBlocks(text).map((b) => `${b.keyword} ${b.name}`)).toEqual(['generator client', 'model User', 'generator dbml']);
  });

  it('appends to a one-line list and keeps the other features', () => {
    const text = 'generator client {\n  provider        = "prisma-client"\n  previewFeatures = ["relationJoins"]\n}\n';
    expect(enable(text)).toBe(text.replace('["relationJoins"]', '["relationJoins", "partialIndexes"]'));
  });

  it('fills an empty list', () => {
    const text = 'generator client {\n  provider = "prisma-client-js"\n  previewFeatures = []\n}\n';
    expect(enable(text)).toBe(text.replace('[]', '["partialIndexes"]'));
  });

  it('adds previewFeatures under provider, aligned with it, when there is none', () => {
    const aligned = 'generator client {\n  provider        = "prisma-client"\n  output          = "../generated"\n}\n';
    expect(enable(aligned)).toBe(aligned.replace('"prisma-client"\n', '"prisma-client"\n  previewFeatures = ["partialIndexes"]\n'));
    const tight = 'generator client {\n\tprovider = "prisma-client-js"\n}\n';
    expect(enable(tight)).toBe('generator client {\n\tprovider = "prisma-client-js"\n\tpreviewFeatures = ["partialIndexes"]\n}\n');
  });

  it('leaves a generator that has the feature alone, and ignores a commented-out list', () => {
    const on = 'generator client {\n  provider = "prisma-client"\n  previewFeatures = ["partialIndexes"]\n}\n';
    expect(enable(on)).toBe(on);
    const commented = 'generator client {\n  provider = "prisma-client"\n  // previewFeatures = ["partialIndexes"]\n}\n';
    expect(findGenerators(commented)[0].previewFeatures).toBeNull();
    expect(enable(commented)).toContain('"prisma-client"\n  previewFeatures = ["partialIndexes"]\n  // previewFeatures');
  });

  it('edits every generator of a file, the offsets of the earlier ones intact', () => {
    const text =
      'generator a {\n  provider = "prisma-client"\n}\n\ngenerator b {\n  provider = "prisma-client-js"\n  previewFeatures = ["views"]\n}\n';
    expect(enable(text)).toBe(
      'generator a {\n  provider = "prisma-client"\n  previewFeatures = ["partialIndexes"]\n}\n\ngenerator b {\n  provider = "prisma-client-js"\n  previewFeatures = ["views", "partialIndexes"]\n}\n',
    );
  });
});
