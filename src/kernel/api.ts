/** Where the API's routes live; links in answers are built from it. */
export const API_PREFIX = '/api/v1';
