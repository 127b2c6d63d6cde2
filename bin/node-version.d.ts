export declare const MINIMUM_NODE: string;
export declare function nodeVersionProblem(version: string): string | undefined;
